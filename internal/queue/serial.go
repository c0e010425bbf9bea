package queue

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// Serial runs.
//
// A task without a Key (every task of a hook without parallelism, and a
// Synchronization, schedule or onStartup task of a hook with it) runs
// alone in its queue: once it is the head and nothing else of the queue
// runs, and, for a hook with parallelism, none of the hook's tasks with a
// Key runs in another queue. Before its first run it waits for its hook's
// rate limit and the batch window, while later tasks of its hook pile up
// behind it, and it takes them all into its run. A failed run holds the
// whole queue until its retry.

// serialMode is the state of a queue's tasks without a Key.
type serialMode struct {
	// running is the task running now, started when it started.
	running *Task
	started time.Time
	// retryAt is when the head task (held back after a failure) runs again.
	retryAt time.Time
}

func (m *serialMode) due(pending []*Task, now time.Time) time.Time {
	if len(pending) > 0 && pending[0].Key == "" && m.retryAt.After(now) {
		return m.retryAt
	}
	return time.Time{}
}

func (m *serialMode) resumeNow() { m.retryAt = time.Time{} }

func (m *serialMode) retryNow(pending []*Task) int {
	if len(pending) > 0 && pending[0].Key == "" && pending[0].attempts > 0 && !m.retryAt.IsZero() {
		m.retryAt = time.Time{}
		return 1
	}
	return 0
}

func (m *serialMode) forget(pending []*Task, head *Task) {
	if len(pending) == 0 || pending[0] != head {
		m.retryAt = time.Time{}
	}
}

func (m *serialMode) awaitsResume() bool { return !m.retryAt.IsZero() }

func (m *serialMode) describe(st *QueueState, _ []*Task) {
	st.RetryAt = m.retryAt
	if m.running != nil {
		r := taskState(m.running)
		r.Started = m.started
		st.Running = &r
	}
}

// headMayRunLocked reports whether q's head, a task without a Key, may run
// now: nothing else of q runs, it is not held after a failure, and, for a
// hook with parallelism, none of the hook's tasks with a Key runs in
// another queue.
func (s *Set) headMayRunLocked(q *fifo) bool {
	if len(q.tasks) == 0 || q.tasks[0].Key != "" || len(q.parallel.running) > 0 || s.clock.Now().Before(q.serial.retryAt) {
		return false
	}
	h := q.tasks[0].Hook
	return h.Config.Settings.Parallelism <= 1 || s.keyed[h] == 0
}

// runSerial runs head, q's head task without a Key, counted as running by
// awaitHead: it waits for the hook's rate limit and the batch window while
// later tasks pile up behind it, merges the hook's pending tasks into it,
// runs it, and on failure holds q until the retry. It returns false when
// the set stops.
func (s *Set) runSerial(q *fifo, head *Task) bool {
	if l := s.limiter(head.Hook); l != nil {
		if err := l.Wait(s.stopCtx); err != nil {
			return false
		}
	}
	if head.attempts == 0 && !s.batch(q, head.Hook) {
		return false
	}

	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return false
	}
	if len(q.tasks) == 0 || q.tasks[0] != head {
		s.alone[head.Hook]-- // dropped while it waited (DropHook, Drop)
		s.mu.Unlock()
		return true
	}
	t := s.takeLocked(q)
	q.serial.running, q.serial.started = t, s.clock.Now()
	t.waited = q.serial.started.Sub(t.ready)
	s.Metrics.QueueLength(q.name, len(q.tasks))
	if t.attempts == 0 {
		s.Metrics.QueueWait(q.name, q.serial.started.Sub(t.enqueued))
	}
	s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
	s.mu.Unlock()

	err := s.handler(s.runCtx, t)

	s.mu.Lock()
	q.serial.running = nil
	q.ended = s.clock.Now()
	q.noteRunTime(t.Hook.Name, q.ended.Sub(q.serial.started))
	s.alone[t.Hook]--
	s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
	if t.Hook.Config.Settings.Parallelism > 1 {
		s.signalAllLocked() // the hook's tasks with a Key in other queues may start
	}
	q.serial.retryAt, q.resume = time.Time{}, nil
	o := s.settleLocked(q, t, err, s.log.WithFields(logrus.Fields{"hook": t.Hook.Name, "queue": q.name}),
		func(at time.Time, _ bool) { q.serial.retryAt = at }) // the held head holds the queue
	s.mu.Unlock()
	o.report()
	return true
}

// batch waits, after a recent run of q, while events stream in: until the
// window of h (window) has passed since the run ended, or no task has been
// pushed for half of it, or h's fill (Options.BatchFill, or
// ResidentBatchFill for a resident hook) of its tasks wait. A task
// pushed more than half a window after the one before it is no stream, and
// does not wait. It returns false when the set stops meanwhile.
func (s *Set) batch(q *fifo, h *hook.Hook) bool {
	s.mu.Lock()
	q.batching, q.batched = h, s.waitingLocked(q, h)
	select {
	case <-q.full: // an earlier batch's
	default:
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		q.batching = nil
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		ended, pushed, gap := q.ended, q.pushed, q.gap
		window := s.windowLocked(q, h)
		fill := s.opts.fill(h)
		filled := fill > 0 && q.batched >= fill
		s.mu.Unlock()
		quiet := window / 2
		if window <= 0 || ended.IsZero() || gap > quiet || filled {
			return true
		}
		now := s.clock.Now()
		until := ended.Add(window)
		if !now.Before(until) || !now.Before(pushed.Add(quiet)) {
			return true
		}
		if quietAt := pushed.Add(quiet); quietAt.Before(until) {
			until = quietAt
		}
		fired, stop := s.clock.At(until)
		select {
		case <-fired:
		case <-q.full:
			stop()
		case <-s.stopCtx.Done():
			stop()
			return false
		}
	}
}

// waitingLocked counts h's tasks without a Key in q.
func (s *Set) waitingLocked(q *fifo, h *hook.Hook) int {
	n := 0
	for _, t := range q.tasks {
		if t.Hook == h && t.Key == "" {
			n++
		}
	}
	return n
}

// windowLocked returns the batch window of h's next run in q: the fixed
// window, or under AdaptiveBatch h's recent run time in q, at most
// BatchWindow; zero before h's first run there. (A window of three run times
// was measured too, and did not pay: see docs/design/running-hooks.md, "Batch
// window".)
func (s *Set) windowLocked(q *fifo, h *hook.Hook) time.Duration {
	if !s.opts.AdaptiveBatch {
		return s.opts.BatchWindow
	}
	return min(q.runTime[h.Name], s.opts.BatchWindow)
}

// noteRunTime adds a run of hook that took d to its moving average in q
// (a quarter of the newest run, three quarters of the average before), so
// that one slow run moves the window by a quarter of its time.
func (q *fifo) noteRunTime(hook string, d time.Duration) {
	if q.runTime == nil {
		q.runTime = map[string]time.Duration{}
	}
	old, ok := q.runTime[hook]
	if !ok {
		q.runTime[hook] = d
		return
	}
	q.runTime[hook] = old + (d-old)/4
}

// takeLocked removes the head task and every other pending task of the same
// hook from q, and returns them merged, oldest contexts first.
func (s *Set) takeLocked(q *fifo) *Task {
	start := s.Metrics.QueueActionStart()
	head := q.tasks[0]
	q.forgetLocked(head)
	rest := q.tasks[:0:0]
	var caps *objectCap
	for _, t := range q.tasks[1:] {
		if t.Hook != head.Hook {
			rest = append(rest, t)
			continue
		}
		if caps == nil {
			caps = newObjectCap(head)
		}
		s.mergeLocked(q, head, t, caps)
	}
	if len(rest) < len(q.tasks)-1 {
		s.Metrics.Compacted(q.name, head.Hook.Name)
	}
	q.tasks = rest
	s.Metrics.QueueAction(q.name, "RemoveFirst", start)
	return head
}
