package queue

import (
	"time"

	"github.com/sirupsen/logrus"
)

// Parallel runs.
//
// A hook with settings.parallelism N above 1 has the Event contexts of its
// kubernetes bindings queued as tasks with a Key: the object they are
// about. Such tasks, when they come before the first task without a Key in
// their queue, run beside each other, under these rules:
//
//   - at most one run per hook and key at a time, and a key's tasks in the
//     order they were pushed: a task waits while an earlier one of its key
//     runs or waits for a retry, and takes every later pending task of its
//     hook and key (up to the next task without a Key) into its run;
//   - at most N runs of the hook at once, and Options.MaxParallel runs with
//     a Key in the whole set;
//   - a task without a Key (a Synchronization, a schedule, onStartup, any
//     task of a hook without parallelism) is a barrier: nothing behind it
//     starts before it has run, and it starts only once nothing else of
//     its queue runs;
//   - a failed run holds only its key: its task goes back to the front of
//     the queue and is retried after its own backoff (or when the API
//     server answers again), while other keys go on.

// heldKey is a key whose last run failed: its task is retried at at, or
// when the queue's resume channel is closed (outage).
type heldKey struct {
	at     time.Time
	outage bool
}

func (t *Task) slot() string { return t.Hook.Name + "\x00" + t.Key }

// startParallelLocked starts every task with a Key ahead of q's first task
// without one that the rules above let start now.
func (s *Set) startParallelLocked(q *fifo) {
	now := time.Now()
	passed := map[string]bool{}
	for i := 0; i < len(q.tasks); i++ {
		t := q.tasks[i]
		if t.Key == "" {
			return
		}
		k := t.slot()
		if passed[k] {
			continue // an earlier task of the key goes first
		}
		passed[k] = true
		if q.keys[k] != nil {
			continue
		}
		if h, ok := q.held[k]; ok && now.Before(h.at) {
			continue
		}
		if s.keyed[t.Hook] >= t.Hook.Config.Settings.Parallelism || s.alone[t.Hook] > 0 {
			continue
		}
		if s.opts.MaxParallel > 0 && s.parallelLocked() >= s.opts.MaxParallel {
			return
		}
		delete(q.held, k)
		run := s.takeKeyLocked(q, i)
		i--
		q.keys[k] = run
		s.keyed[run.Hook]++
		s.Metrics.HookRunning(run.Hook.Name, s.keyed[run.Hook]+s.alone[run.Hook])
		run.started = now
		s.Metrics.QueueLength(q.name, len(q.tasks))
		if run.attempts == 0 {
			s.Metrics.QueueWait(q.name, now.Sub(run.enqueued))
			s.Metrics.ObjectWait(run.Hook.Name, now.Sub(run.enqueued))
		}
		s.wg.Add(1)
		go s.runParallel(q, run, k)
	}
}

// parallelLocked counts the running tasks with a Key in the set.
func (s *Set) parallelLocked() int {
	n := 0
	for _, c := range s.keyed {
		n += c
	}
	return n
}

// takeKeyLocked removes task i from q with every later task of its hook and
// key before the next task without a Key, and returns them merged, oldest
// contexts first.
func (s *Set) takeKeyLocked(q *fifo, i int) *Task {
	head := q.tasks[i]
	rest := append(q.tasks[:i:i], q.tasks[i+1:]...)
	kept := rest[:i:i]
	barrier := false
	for _, t := range rest[i:] {
		if t.Key == "" {
			barrier = true
		}
		if barrier || t.Hook != head.Hook || t.Key != head.Key {
			kept = append(kept, t)
			continue
		}
		s.mergeLocked(q, head, t)
	}
	q.tasks = kept
	return head
}

// runParallel runs t, the task of key k, and settles its outcome.
func (s *Set) runParallel(q *fifo, t *Task, k string) {
	defer s.wg.Done()
	var err error
	stopped := false
	if l := s.limiter(t.Hook); l != nil {
		stopped = l.Wait(s.stopCtx) != nil
	}
	if !stopped {
		err = s.handler(s.runCtx, t)
	}

	s.mu.Lock()
	delete(q.keys, k)
	s.keyed[t.Hook]--
	s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
	q.ended = time.Now()
	s.signalAllLocked() // a slot of the set is free: every queue may start a task
	if stopped {
		s.mu.Unlock()
		return
	}
	// A failed run goes back to the front: it was taken before any task
	// without a Key that is pending now, and stays before it.
	s.settleLocked(q, t, err, s.log.WithFields(logrus.Fields{"hook": t.Hook.Name, "queue": q.name, "key": t.Key}),
		func(at time.Time, outage bool) { q.held[k] = heldKey{at: at, outage: outage} })
}

// headMayRunLocked reports whether q's head, a task without a Key, may run
// now: nothing else of q runs, it is not held after a failure, and, for a
// hook with parallelism, none of the hook's tasks with a Key runs in
// another queue.
func (s *Set) headMayRunLocked(q *fifo) bool {
	if len(q.tasks) == 0 || q.tasks[0].Key != "" || len(q.keys) > 0 || time.Now().Before(q.retryAt) {
		return false
	}
	h := q.tasks[0].Hook
	return h.Config.Settings.Parallelism <= 1 || s.keyed[h] == 0
}

// nextWakeLocked returns how long q's worker may sleep before a held task
// falls due (a negative duration: until something wakes it). Runs ending
// and pushes wake it too.
func (s *Set) nextWakeLocked(q *fifo) time.Duration {
	now := time.Now()
	var next time.Time
	if len(q.tasks) > 0 && q.tasks[0].Key == "" && q.retryAt.After(now) {
		next = q.retryAt
	}
	for _, h := range q.held {
		if h.at.After(now) && (next.IsZero() || h.at.Before(next)) {
			next = h.at
		}
	}
	if next.IsZero() {
		return -1
	}
	return next.Sub(now)
}

// resumeLocked retries at once what failed while the API server was away.
func (s *Set) resumeLocked(q *fifo) {
	q.retryAt, q.resume = time.Time{}, nil
	for k, h := range q.held {
		if h.outage {
			delete(q.held, k)
		}
	}
}
