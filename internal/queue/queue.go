// Package queue orders hook runs. Each named queue runs one task at a time,
// in order. Pending contexts for the same hook in the same queue are merged
// into the run that takes them, so a burst of events costs one run. A failed
// run holds its queue and is retried with exponential backoff and jitter,
// unless every binding in it allows failure.
//
// Tasks with a Key (the events of one object, for a hook with
// settings.parallelism above 1) are the exception: see parallel.go.
package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
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

	done     []func(error)
	attempts int
	// outages counts the failed runs that failed because the API server
	// was away (see Outage): they do not make the backoff grow.
	outages  int
	enqueued time.Time
	lastErr  error
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
	// ends, the next one waits until BatchWindow has passed, or until no
	// new task has arrived for half of it, whichever comes first: events
	// arriving back to back join one run, instead of a fast hook running
	// for every one or two of them (each run costs a process start and its
	// files). A task pushed more than half a window after the one before,
	// and the first of a queue idle for BatchWindow, start their run at
	// once. Retries do not wait for it, nor do parallel runs. Zero turns
	// batching off.
	BatchWindow time.Duration
	// MaxParallel caps the runs of tasks with a Key across the set; zero
	// means no cap beyond each hook's parallelism.
	MaxParallel int
}

// Set is every queue of the operator.
type Set struct {
	handler Handler
	opts    Options
	log     logrus.FieldLogger
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
	runCtx   context.Context // handlers' context: ends after Stop's grace period
	cancel   context.CancelFunc
	stopCtx  context.Context // ends at Stop: ends waits for rate limits
	stopNow  context.CancelFunc
	wg       sync.WaitGroup
}

type fifo struct {
	name    string
	tasks   []*Task
	running *Task
	started time.Time // of the running task
	wake    chan struct{}
	// retryAt is when the head task (held back after a failure) runs again.
	retryAt time.Time
	// resume, when set, brings retryAt forward to now when it is closed:
	// the head failed during an outage of the API server, which has ended.
	resume <-chan struct{}
	// ended is when the last run ended, pushed when the last task was
	// pushed, and gap how long after the task before it (see
	// Options.BatchWindow).
	ended, pushed time.Time
	gap           time.Duration
	// keys are the tasks with a Key running now, by hook and key; held are
	// the keys whose task failed and waits to be retried.
	keys map[string]*Task
	held map[string]heldKey
}

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
		stopCtx:  stopCtx,
		stopNow:  stopNow,
		handler:  handler,
		opts:     opts,
		log:      log,
		queues:   map[string]*fifo{},
		limiters: map[*hook.Hook]*rate.Limiter{},
		keyed:    map[*hook.Hook]int{},
		alone:    map[*hook.Hook]int{},
		runCtx:   ctx,
		cancel:   cancel,
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
	q := s.queues[t.Queue]
	if q == nil {
		q = &fifo{name: t.Queue, wake: make(chan struct{}, 1), keys: map[string]*Task{}, held: map[string]heldKey{}}
		s.queues[t.Queue] = q
		s.wg.Add(1)
		go s.work(q)
	}
	if t.Done != nil {
		t.done = append(t.done, t.Done)
		t.Done = nil
	}
	t.enqueued = time.Now()
	q.gap = t.enqueued.Sub(q.pushed)
	q.pushed = t.enqueued
	q.tasks = append(q.tasks, t)
	s.Metrics.QueueLength(q.name, len(q.tasks))
	q.signal()
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

// work is q's worker: take the head, wait for its hook's rate limit, merge
// the hook's other pending tasks into it, run it, and on failure either
// drop it (allowed) or hold the queue and retry after a backoff.
func (s *Set) work(q *fifo) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		for {
			if s.stopping {
				s.mu.Unlock()
				return
			}
			// Tasks with a Key ahead of the first task without one start
			// beside each other (parallel.go); a task without one waits
			// until it is the head and nothing else of the queue runs.
			s.startParallelLocked(q)
			if s.headMayRunLocked(q) {
				s.alone[q.tasks[0].Hook]++
				break
			}
			wait := s.nextWakeLocked(q)
			resume := q.resume
			s.mu.Unlock()
			if s.sleep(q, wait, resume) {
				s.mu.Lock()
				s.resumeLocked(q)
				continue
			}
			s.mu.Lock()
		}
		head := q.tasks[0]
		s.mu.Unlock()

		// Wait for the hook's rate limit and the batch window while later
		// events keep piling up behind the head, to be merged into this run.
		if l := s.limiter(head.Hook); l != nil {
			if err := l.Wait(s.stopCtx); err != nil {
				return
			}
		}
		if head.attempts == 0 && !s.batch(q) {
			return
		}

		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		if len(q.tasks) == 0 || q.tasks[0] != head {
			s.alone[head.Hook]-- // dropped while it waited (DropHook, Drop)
			s.mu.Unlock()
			continue
		}
		t := s.takeLocked(q)
		q.running = t
		q.started = time.Now()
		s.Metrics.QueueLength(q.name, len(q.tasks))
		if t.attempts == 0 {
			s.Metrics.QueueWait(q.name, time.Since(t.enqueued))
		}
		s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
		s.mu.Unlock()

		err := s.handler(s.runCtx, t)

		s.mu.Lock()
		q.running = nil
		q.ended = time.Now()
		s.alone[t.Hook]--
		s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
		if t.Hook.Config.Settings.Parallelism > 1 {
			s.signalAllLocked() // the hook's tasks with a Key in other queues may start
		}
		q.retryAt, q.resume = time.Time{}, nil
		s.settleLocked(q, t, err, s.log.WithFields(logrus.Fields{"hook": t.Hook.Name, "queue": q.name}),
			func(at time.Time, _ bool) { q.retryAt = at }) // the held head holds the queue
	}
}

// settleLocked ends a run of t that returned err, and unlocks s.mu. A
// succeeded run, or a failed one whose failure is allowed, finishes t. A
// failed run goes back to the front of q to be retried: hold is told when
// (after its backoff, or, failed during an outage of the API server, at
// RetryMax at the latest and as soon as q.resume is closed).
func (s *Set) settleLocked(q *fifo, t *Task, err error, log logrus.FieldLogger, hold func(at time.Time, outage bool)) {
	var outage *OutageError
	switch {
	case err == nil:
		s.mu.Unlock()
		t.finish(nil)
		return
	case t.AllowFailure:
		s.mu.Unlock()
		log.WithError(err).Warn("hook failed; allowFailure is set, moving on")
		t.finish(err)
		return
	}
	t.attempts++
	t.lastErr = err
	var delay time.Duration
	if errors.As(err, &outage) {
		t.outages++
		hold(time.Now().Add(s.opts.RetryMax), true)
		q.resume = outage.Back
	} else {
		delay = s.backoff(t.attempts - t.outages)
		hold(time.Now().Add(delay), false)
	}
	q.tasks = append([]*Task{t}, q.tasks...)
	attempts := t.attempts // a parallel t may run again once the lock is let go
	s.mu.Unlock()
	log = log.WithField("attempt", attempts).WithError(err)
	if outage != nil {
		log.Warn("hook failed while the API server was away; retrying as soon as it answers")
		return
	}
	log.WithField("retryIn", delay.Round(time.Millisecond).String()).Error("hook failed; retrying")
}

// signalAllLocked wakes every queue's worker: a run that others waited for
// has ended.
func (s *Set) signalAllLocked() {
	for _, q := range s.queues {
		q.signal()
	}
}

// batch waits, after a recent run of q, while events stream in: until
// BatchWindow has passed since the run ended, or no task has been pushed
// for half of BatchWindow. A task pushed more than half a window after
// the one before it is no stream, and does not wait. It returns false
// when the set stops meanwhile.
func (s *Set) batch(q *fifo) bool {
	window := s.opts.BatchWindow
	if window <= 0 {
		return true
	}
	quiet := window / 2
	for {
		s.mu.Lock()
		ended, pushed, gap := q.ended, q.pushed, q.gap
		s.mu.Unlock()
		if ended.IsZero() || gap > quiet {
			return true
		}
		now := time.Now()
		until := ended.Add(window)
		if !now.Before(until) || !now.Before(pushed.Add(quiet)) {
			return true
		}
		if quietAt := pushed.Add(quiet); quietAt.Before(until) {
			until = quietAt
		}
		timer := time.NewTimer(until.Sub(now))
		select {
		case <-timer.C:
		case <-s.stopCtx.Done():
			timer.Stop()
			return false
		}
	}
}

// takeLocked removes the head task and every other pending task of the same
// hook from q, and returns them merged, oldest contexts first.
func (s *Set) takeLocked(q *fifo) *Task {
	head := q.tasks[0]
	rest := q.tasks[:0:0]
	for _, t := range q.tasks[1:] {
		if t.Hook != head.Hook {
			rest = append(rest, t)
			continue
		}
		s.mergeLocked(q, head, t)
	}
	q.tasks = rest
	return head
}

// mergeLocked adds the pending task t of q to head, which will run it.
func (s *Set) mergeLocked(q *fifo, head, t *Task) {
	s.Metrics.Combined(head.Hook.Name, q.name, len(t.Contexts))
	head.Contexts = append(head.Contexts, t.Contexts...)
	head.AllowFailure = head.AllowFailure && t.AllowFailure
	head.done = append(head.done, t.done...)
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

// sleep waits for a push, Stop, (wait >= 0) the given time, or resume to
// be closed, which it reports.
func (s *Set) sleep(q *fifo, wait time.Duration, resume <-chan struct{}) bool {
	var timeout <-chan time.Time
	if wait >= 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
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
// again at the next start.
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
