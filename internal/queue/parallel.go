package queue

import (
	"slices"
	"sort"
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

// parallelMode is the state of a queue's tasks with a Key.
type parallelMode struct {
	// running are the tasks running now, by hook and key (Task.slot).
	running map[string]*Task
	// held are the keys whose task failed and waits to be retried.
	held map[string]heldKey
}

// heldKey is a key whose last run failed: its task is retried at at, or
// when the queue's resume channel is closed (outage).
type heldKey struct {
	at     time.Time
	outage bool
}

func newParallelMode() parallelMode {
	return parallelMode{running: map[string]*Task{}, held: map[string]heldKey{}}
}

func (m *parallelMode) due(_ []*Task, now time.Time) time.Time {
	var next time.Time
	for _, h := range m.held {
		if h.at.After(now) && (next.IsZero() || h.at.Before(next)) {
			next = h.at
		}
	}
	return next
}

func (m *parallelMode) resumeNow() {
	for k, h := range m.held {
		if h.outage {
			delete(m.held, k)
		}
	}
}

func (m *parallelMode) retryNow([]*Task) int {
	n := 0
	for k, h := range m.held {
		if !h.at.IsZero() {
			m.held[k] = heldKey{outage: h.outage}
			n++
		}
	}
	return n
}

func (m *parallelMode) forget(pending []*Task, _ *Task) {
	for k := range m.held {
		if !slices.ContainsFunc(pending, func(t *Task) bool { return t.slot() == k }) {
			delete(m.held, k)
		}
	}
}

func (m *parallelMode) awaitsResume() bool {
	for _, h := range m.held {
		if h.outage {
			return true
		}
	}
	return false
}

func (m *parallelMode) describe(st *QueueState, pending []*Task) {
	for _, t := range m.running {
		r := taskState(t)
		r.Started = t.started
		st.Parallel = append(st.Parallel, r)
	}
	sort.Slice(st.Parallel, func(i, j int) bool { return st.Parallel[i].Key < st.Parallel[j].Key })
	for i, t := range pending {
		if h, ok := m.held[t.slot()]; ok && t.Key != "" && t.attempts > 0 {
			st.Pending[i].RetryAt = h.at
		}
	}
}

func (t *Task) slot() string { return t.Hook.Name + "\x00" + t.Key }

// startParallelLocked starts every task with a Key ahead of q's first task
// without one that the rules above let start now.
func (s *Set) startParallelLocked(q *fifo) {
	now := s.clock.Now()
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
		if q.parallel.running[k] != nil {
			continue
		}
		if h, ok := q.parallel.held[k]; ok && now.Before(h.at) {
			continue
		}
		if s.keyed[t.Hook] >= t.Hook.Config.Settings.Parallelism || s.alone[t.Hook] > 0 {
			continue
		}
		if s.opts.MaxParallel > 0 && s.parallelLocked() >= s.opts.MaxParallel {
			return
		}
		delete(q.parallel.held, k)
		run := s.takeKeyLocked(q, i)
		i--
		q.parallel.running[k] = run
		s.keyed[run.Hook]++
		s.Metrics.HookRunning(run.Hook.Name, s.keyed[run.Hook]+s.alone[run.Hook])
		run.started, run.waited = now, now.Sub(run.ready)
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
	defer s.Metrics.QueueAction(q.name, "Remove", s.Metrics.QueueActionStart())
	head := q.tasks[i]
	q.forgetLocked(head)
	rest := append(q.tasks[:i:i], q.tasks[i+1:]...)
	kept := rest[:i:i]
	barrier := false
	var caps *objectCap
	for _, t := range rest[i:] {
		if t.Key == "" {
			barrier = true
		}
		if barrier || t.Hook != head.Hook || t.Key != head.Key {
			kept = append(kept, t)
			continue
		}
		if caps == nil {
			caps = newObjectCap(head)
		}
		s.mergeLocked(q, head, t, caps)
	}
	if len(kept) < len(rest) {
		s.Metrics.Compacted(q.name, head.Hook.Name)
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
	delete(q.parallel.running, k)
	s.keyed[t.Hook]--
	s.Metrics.HookRunning(t.Hook.Name, s.keyed[t.Hook]+s.alone[t.Hook])
	q.ended = s.clock.Now()
	s.signalAllLocked() // a slot of the set is free: every queue may start a task
	if stopped {
		s.mu.Unlock()
		return
	}
	// A failed run goes back to the front: it was taken before any task
	// without a Key that is pending now, and stays before it.
	o := s.settleLocked(q, t, err, s.log.WithFields(logrus.Fields{"hook": t.Hook.Name, "queue": q.name, "key": t.Key}),
		func(at time.Time, outage bool) { q.parallel.held[k] = heldKey{at: at, outage: outage} })
	s.mu.Unlock()
	o.report()
}
