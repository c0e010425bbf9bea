// Package queue orders hook runs. Each named queue runs one task at a time,
// in order. Pending contexts for the same hook in the same queue are merged
// into the run that takes them, so a burst of events costs one run. A failed
// run holds its queue and is retried with exponential backoff and jitter,
// unless every binding in it allows failure.
//
// A queue runs its tasks in two modes, each with its state behind the mode
// interface: tasks without a Key run one at a time, and a failed one holds
// the whole queue (serial.go, serialMode); tasks with a Key (the events of
// one object, for a hook with settings.parallelism above 1) run beside
// each other, and a failed one holds only its key (parallel.go,
// parallelMode). One worker per queue (work) starts both.
//
// Locking: Set.mu guards every queue. A function whose name ends in Locked
// is called with it held and returns with it held; the others are called
// without it.
package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// Task is a pending run of a hook.
type Task struct {
	Hook     *hook.Hook
	Queue    string
	Contexts []binding.Context
	// AllowFailure lets the queue drop the task when its run fails. A merged
	// task allows failure only if every task merged into it did.
	AllowFailure bool
	// Done, when set, is called once the task's run succeeded or its failure
	// was allowed (err is then the failure), or when the task was dropped
	// before it ran (err is ErrDropped). Merged tasks keep every Done.
	Done func(err error)
	// Key names the object the task's contexts are about, for a hook whose
	// runs for different objects may run at once (parallelism above 1);
	// "" for every other task, which runs alone in its queue.
	Key string
	// Origin says what asked for the run when it was not a binding itself:
	// "trigger" for `hook-operator trigger`, "" otherwise. It goes to the
	// run's log lines. A task merged into another passes its origin on.
	Origin string
	// Trace, with tracing on, is the span context of the task's root span
	// (its watch event, schedule tick, ...), under which its wait and runs
	// are traced. A task merged into another becomes one of its Links.
	Trace trace.SpanContext

	// links are the roots of the tasks merged into this one, the first
	// MaxLinks of them; droppedLinks counts the rest.
	links        []trace.SpanContext
	droppedLinks int

	done     []func(error)
	attempts int
	// waiting: t is pending, one object's Event context alone, and the
	// last of its object's in its queue (objects.go).
	waiting bool
	// outages counts the failed runs that failed because the API server
	// was away (see Outage): they do not make the backoff grow.
	outages  int
	enqueued time.Time
	// ready is when the task could run last: when it was queued, or, after
	// a failure, when that run ended; waited, set as its run starts, how
	// long it waited since (Waited).
	ready   time.Time
	waited  time.Duration
	lastErr error
	// started is when the run of a parallel task started.
	started time.Time
}

// OutageError is the error of a run that failed because the API server was
// away. Its task is retried the moment Back is closed (the server answers
// again), not after a backoff, and the failure does not make later
// backoffs longer.
type OutageError struct {
	Err  error
	Back <-chan struct{}
}

// Attempts returns how many runs of the task failed so far: more than zero
// in a retry.
func (t *Task) Attempts() int { return t.attempts }

// MaxLinks is the most roots of merged tasks a task keeps (Links).
const MaxLinks = 32

// Links returns the roots of the tasks merged into t (the first MaxLinks)
// and how many more were merged.
func (t *Task) Links() ([]trace.SpanContext, int) { return t.links, t.droppedLinks }

// Waited returns how long the task's current run waited in its queue
// before it started: since the task was queued, or, for a retry, since the
// run that failed before it ended (its backoff, and the runs ahead of it).
func (t *Task) Waited() time.Duration { return t.waited }

func (e *OutageError) Error() string { return e.Err.Error() }
func (e *OutageError) Unwrap() error { return e.Err }

// Handler runs a task. ctx ends when the queue set's grace period after
// Stop is over.
type Handler func(ctx context.Context, t *Task) error

// Options tune retries and batching.
type Options struct {
	// RetryInitial is the first pause after a failure; it doubles per
	// failure up to RetryMax. Each pause varies by up to ±20%.
	RetryInitial, RetryMax time.Duration
	// BatchWindow bounds how often a queue runs while events stream in,
	// each less than half a window after the one before. After a run
	// ends, the next one waits until the window has passed, or until no
	// new task has arrived for half of it, whichever comes first: events
	// arriving back to back join one run, instead of a fast hook running
	// for every one or two of them (each run costs a process start and its
	// files). A task pushed more than half a window after the one before,
	// and the first of a queue idle for the window, start their run at
	// once. Retries do not wait for it, nor do parallel runs. Zero turns
	// batching off: the next run starts as soon as the last one ends.
	//
	// With AdaptiveBatch, BatchWindow is only the longest window, and each
	// hook's window is its own recent run time (see windowLocked).
	BatchWindow time.Duration
	// AdaptiveBatch makes the window follow the hook: a hook whose runs
	// take 0.2 ms waits about that long between runs during a stream, one
	// whose runs take 20 ms that long, so that a streaming hook's runs
	// take at most about half of the time (their cost per event halved
	// against running back to back) and an event waits at most about one
	// run for the run that takes it.
	AdaptiveBatch bool
	// BatchFill ends a batch window early: a run waiting for its window
	// starts at once when this many of its hook's tasks wait for it, as
	// a run that carries that many events costs each of them little
	// (DefaultBatchFill). Where events arrive fast, the window would only
	// add latency. Zero: the window alone decides.
	BatchFill int
	// ResidentBatchFill is BatchFill for the hooks with settings.resident,
	// whose runs cost the operator far less than a process start
	// (DefaultResidentBatchFill); zero: BatchFill applies to them too.
	ResidentBatchFill int
	// MaxParallel caps the runs of tasks with a Key across the set; zero
	// means no cap beyond each hook's parallelism.
	MaxParallel int
}

// DefaultBatchFill is the operator's BatchFill (--batch-fill): a run's own
// cost in the operator (about 0.65 ms of CPU for a one-shot hook, measured
// on 2 cores) spread over 32 events is 0.02 ms each, a sixth of what an
// event costs it otherwise, so a longer wait would save little CPU for its
// latency (docs/design/running-hooks.md, "Batch window").
const DefaultBatchFill = 32

// DefaultResidentBatchFill is the operator's ResidentBatchFill (--batch-fill
// auto): a resident run costs the operator no process start, so its runs may
// carry fewer events. Measured on 2 cores (a burst of 3,000 ConfigMaps,
// resident Go hook), 16 halved the wait of 32 (10.5 against 21 ms) for the
// same operator CPU per event; 8 cut it to 3 ms for a fifth more, as each
// resident run still costs the operator about 0.3 ms
// (docs/design/running-hooks.md, "Batch window").
const DefaultResidentBatchFill = 16

// fill returns the BatchFill that applies to h's runs.
func (o Options) fill(h *hook.Hook) int {
	if h.Config.Settings.Resident && o.ResidentBatchFill > 0 {
		return o.ResidentBatchFill
	}
	return o.BatchFill
}

// Set is every queue of the operator.
type Set struct {
	handler Handler
	opts    Options
	log     logrus.FieldLogger
	clock   clock
	// Metrics, when set before the first Push, receives queue lengths,
	// wait times and merges.
	Metrics *metrics.Metrics

	mu       sync.Mutex
	queues   map[string]*fifo
	limiters map[*hook.Hook]*rate.Limiter
	// keyed counts the running tasks with a Key per hook, alone the hook's
	// running tasks without one.
	keyed    map[*hook.Hook]int
	alone    map[*hook.Hook]int
	stopping bool
	// supersededLog samples the warning that an object's contexts reached
	// MaxObjectContexts.
	supersededLog *rate.Limiter
	runCtx        context.Context // handlers' context: ends after Stop's grace period
	cancel        context.CancelFunc
	stopCtx       context.Context // ends at Stop: ends waits for rate limits
	stopNow       context.CancelFunc
	wg            sync.WaitGroup
}

type fifo struct {
	name  string
	tasks []*Task
	wake  chan struct{}
	// batching is the hook whose next run waits for its batch window
	// (Set.batch), nil when none does; batched counts its tasks without a
	// Key in the queue, kept by Push while it waits, and full is signalled
	// by the push that makes them the hook's fill (Options.fill).
	batching *hook.Hook
	batched  int
	full     chan struct{}
	// resume, when set, makes due at once what failed during an outage of
	// the API server, in either mode, when it is closed: the server
	// answers again.
	resume <-chan struct{}
	// ended is when the last run ended, pushed when the last task was
	// pushed, and gap how long after the task before it (see
	// Options.BatchWindow).
	ended, pushed time.Time
	gap           time.Duration
	// runTime is each hook's recent run time in this queue (a moving
	// average of its runs without a Key), by name, for AdaptiveBatch.
	runTime map[string]time.Duration
	// objects counts the Event contexts of each object waiting in the
	// queue, and epochs each hook's contexts of other types queued
	// (objects.go).
	objects map[objectKey]*waitingObject
	epochs  map[*hook.Hook]uint64
	// serial holds the state of the tasks without a Key, parallel of those
	// with one.
	serial   serialMode
	parallel parallelMode
}

// mode is the state of one of a queue's two ways of running tasks: what
// runs, and what waits for its retry after a failure. pending is the
// queue's pending tasks, in order. Every method is called with Set.mu
// held.
type mode interface {
	// due returns when the next task held after a failure falls due; zero
	// when none waits beyond now.
	due(pending []*Task, now time.Time) time.Time
	// resumeNow makes due at once what failed during an outage.
	resumeNow()
	// retryNow makes due at once what waits for its backoff or the end of
	// an outage, and returns how many it made due.
	retryNow(pending []*Task) int
	// forget lets go of the holds of tasks dropped from pending; head was
	// the first pending task before.
	forget(pending []*Task, head *Task)
	// awaitsResume reports whether a held task may wait for fifo.resume.
	awaitsResume() bool
	// describe adds what runs and when held tasks run again to st, whose
	// Pending describes pending.
	describe(st *QueueState, pending []*Task)
}

func (q *fifo) modes() [2]mode { return [2]mode{&q.serial, &q.parallel} }

// NewSet returns an empty queue set that runs tasks with handler.
func NewSet(handler Handler, opts Options, log logrus.FieldLogger) *Set {
	if opts.RetryInitial <= 0 {
		opts.RetryInitial = time.Second
	}
	if opts.RetryMax < opts.RetryInitial {
		opts.RetryMax = opts.RetryInitial
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopCtx, stopNow := context.WithCancel(context.Background())
	return &Set{
		stopCtx:       stopCtx,
		stopNow:       stopNow,
		handler:       handler,
		opts:          opts,
		clock:         wallClock{},
		log:           log,
		queues:        map[string]*fifo{},
		limiters:      map[*hook.Hook]*rate.Limiter{},
		keyed:         map[*hook.Hook]int{},
		alone:         map[*hook.Hook]int{},
		supersededLog: rate.NewLimiter(rate.Every(20*time.Second), 3),
		runCtx:        ctx,
		cancel:        cancel,
	}
}

// ErrStopped is returned by Push after Stop.
var ErrStopped = errors.New("queue set is stopping; no new work is taken")

// Push appends t to its queue (created on first use, with its worker).
func (s *Set) Push(t *Task) error {
	if t.Queue == "" {
		t.Queue = hook.DefaultQueue
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return ErrStopped
	}
	defer s.Metrics.QueueAction(t.Queue, "AddLast", s.Metrics.QueueActionStart())
	q := s.queues[t.Queue]
	if q == nil {
		q = &fifo{name: t.Queue, wake: make(chan struct{}, 1), full: make(chan struct{}, 1), parallel: newParallelMode()}
		s.queues[t.Queue] = q
		s.wg.Add(1)
		go s.work(q)
	}
	if t.Done != nil {
		t.done = append(t.done, t.Done)
		t.Done = nil
	}
	t.enqueued = s.clock.Now()
	t.ready = t.enqueued
	q.gap = t.enqueued.Sub(q.pushed)
	q.pushed = t.enqueued
	if s.supersedeLocked(q, t) {
		return nil // its context replaced the last of its object's waiting
	}
	q.tasks = append(q.tasks, t)
	s.Metrics.QueueLength(q.name, len(q.tasks))
	q.signal()
	if t.Hook == q.batching && t.Key == "" {
		if q.batched++; q.batched == s.opts.fill(t.Hook) {
			select {
			case q.full <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (q *fifo) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// limiter returns the hook's rate limiter, or nil when it has none.
func (s *Set) limiter(h *hook.Hook) *rate.Limiter {
	st := h.Config.Settings
	if st.ExecutionMinInterval <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limiters[h]
	if l == nil {
		burst := max(st.ExecutionBurst, 1)
		l = rate.NewLimiter(rate.Every(st.ExecutionMinInterval), burst)
		s.limiters[h] = l
	}
	return l
}

// work is q's worker. It starts the tasks with a Key that may start
// (parallel.go) and runs the head, a task without a Key, once it may run
// (serial.go); in between it sleeps until a push, the end of a run, a
// retry falling due, or the end of an outage.
func (s *Set) work(q *fifo) {
	defer s.wg.Done()
	for {
		head := s.awaitHead(q)
		if head == nil || !s.runSerial(q, head) {
			return
		}
	}
}

// awaitHead returns q's head once it may run alone, counted as running, or
// nil when the set stops. Meanwhile it starts q's tasks with a Key.
func (s *Set) awaitHead(q *fifo) *Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.stopping {
		s.startParallelLocked(q)
		if s.headMayRunLocked(q) {
			head := q.tasks[0]
			s.alone[head.Hook]++
			return head
		}
		until := s.nextWakeLocked(q)
		resume := q.resume
		s.mu.Unlock()
		resumed := s.sleep(q, until, resume)
		s.mu.Lock()
		if resumed {
			s.resumeLocked(q)
		}
	}
	return nil
}

// nextWakeLocked returns when q's worker is to wake because a held task
// of either mode falls due (zero: not for that). Runs ending and pushes
// wake it too.
func (s *Set) nextWakeLocked(q *fifo) time.Time {
	now := s.clock.Now()
	var next time.Time
	for _, m := range q.modes() {
		if at := m.due(q.tasks, now); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// resumeLocked retries at once what failed while the API server was away.
func (s *Set) resumeLocked(q *fifo) {
	q.resume = nil
	for _, m := range q.modes() {
		m.resumeNow()
	}
}

// settled is what follows a run, reported once Set.mu is let go.
type settled struct {
	t   *Task
	err error
	log logrus.FieldLogger
	// finished: the run succeeded, or its failure is allowed.
	finished bool
	attempts int
	outage   bool
	delay    time.Duration
}

// settleLocked decides what follows a run of t that returned err. A
// succeeded run, or a failed one whose failure is allowed, finishes t. A
// failed run goes back to the front of q to be retried: hold is told when
// (after its backoff, or, failed during an outage of the API server, at
// RetryMax at the latest and as soon as q.resume is closed). The caller
// lets Set.mu go, then calls report.
func (s *Set) settleLocked(q *fifo, t *Task, err error, log logrus.FieldLogger, hold func(at time.Time, outage bool)) settled {
	if err == nil || t.AllowFailure {
		return settled{t: t, err: err, log: log, finished: true}
	}
	start := s.Metrics.QueueActionStart()
	t.attempts++
	t.lastErr = err
	t.ready = s.clock.Now()
	o := settled{t: t, err: err, log: log.WithField("toDrop", DropCommand(q.name, t.Hook.Name, t.Key)), attempts: t.attempts}
	var outage *OutageError
	if errors.As(err, &outage) {
		t.outages++
		o.outage = true
		hold(s.clock.Now().Add(s.opts.RetryMax), true)
		q.resume = outage.Back
	} else {
		o.delay = s.backoff(t.attempts - t.outages)
		hold(s.clock.Now().Add(o.delay), false)
	}
	q.tasks = append([]*Task{t}, q.tasks...)
	s.Metrics.QueueAction(q.name, "AddFirst", start)
	return o
}

// report finishes the task of a finished run (its Done callbacks may
// push), or logs the failure of a run to be retried. Call it without
// Set.mu: a failed parallel task may run again meanwhile, which is why
// settled keeps its own count of attempts.
func (o settled) report() {
	switch {
	case o.finished && o.err == nil:
		o.t.finish(nil)
	case o.finished:
		o.log.WithError(o.err).Warn("hook failed; allowFailure is set, moving on")
		o.t.finish(o.err)
	case o.outage:
		o.log.WithField("attempt", o.attempts).WithError(o.err).Warn("hook failed while the API server was away; retrying as soon as it answers")
	default:
		o.log.WithField("attempt", o.attempts).WithError(o.err).WithField("retryIn", o.delay.Round(time.Millisecond).String()).Error("hook failed; retrying")
	}
}

// signalAllLocked wakes every queue's worker: a run that others waited for
// has ended.
func (s *Set) signalAllLocked() {
	for _, q := range s.queues {
		q.signal()
	}
}

// mergeLocked adds the pending task t of q to head, which will run it;
// caps keeps head's contexts within MaxObjectContexts an object.
func (s *Set) mergeLocked(q *fifo, head, t *Task, caps *objectCap) {
	q.forgetLocked(t)
	s.Metrics.Combined(head.Hook.Name, q.name, len(t.Contexts))
	for i := range t.Contexts {
		if at, ok := caps.place(head, &t.Contexts[i]); ok {
			head.Contexts[at] = t.Contexts[i]
			continue
		}
		head.Contexts = append(head.Contexts, t.Contexts[i])
		caps.add(head, len(head.Contexts)-1)
	}
	s.takeOverLocked(head, t)
}

// takeOverLocked gives head, which takes t's contexts, the rest of t: its
// callbacks, its trace as a link, its origin; head allows failure only if
// both did.
func (s *Set) takeOverLocked(head, t *Task) {
	head.AllowFailure = head.AllowFailure && t.AllowFailure
	head.done = append(head.done, t.done...)
	if t.Trace.IsValid() {
		if len(head.links) < MaxLinks {
			head.links = append(head.links, t.Trace)
		} else {
			head.droppedLinks++
		}
	}
	if t.Origin != "" {
		head.Origin = t.Origin
	}
}

func (t *Task) finish(err error) {
	for _, f := range t.done {
		f(err)
	}
}

// backoff returns the pause after the n-th consecutive failure.
func (s *Set) backoff(n int) time.Duration {
	d := s.opts.RetryInitial
	for i := 1; i < n && d < s.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, s.opts.RetryMax)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// sleep waits for a push, Stop, the time until (unless zero), or resume
// to be closed, which it reports.
func (s *Set) sleep(q *fifo, until time.Time, resume <-chan struct{}) bool {
	var timeout <-chan time.Time
	if !until.IsZero() {
		c, stop := s.clock.At(until)
		defer stop()
		timeout = c
	}
	select {
	case <-q.wake:
	case <-timeout:
	case <-resume:
		return true
	case <-s.runCtx.Done():
	}
	return false
}

// Stop takes no new work, lets the tasks that are running finish within
// grace, then cancels them (their hooks are killed), and returns once every
// worker has ended. Pending tasks are dropped: watches deliver the state
// again at the next start. grace is wall time (it bounds hook processes),
// whatever the set's clock.
func (s *Set) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	s.stopNow()
	for _, q := range s.queues {
		q.signal()
	}
	s.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(grace):
		s.log.WithField("grace", grace.String()).Warn("hooks still running after the grace period; stopping them")
		s.cancel()
		<-finished
	}
	s.cancel()
}
