package queue

import (
	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// One object's contexts.
//
// Every update of a watched object queues a context holding the whole
// object. While its hook fails (its run held for the retry) or is slow, an
// object updated again and again would pile up one context, and one copy
// of the object, per update, and the run that takes them would write them
// all into its contexts file: anyone allowed to update one watched object
// could fill the operator's memory and the run folder's. So at most
// MaxObjectContexts of one object's Event contexts wait for a hook in a
// queue, and as many reach one run: a newer event of an object that has
// as many waiting replaces the last of them (its watch event and object),
// in its place, and counts as combined. An object's last context is so
// always its newest event and state, and its contexts stay in the order
// they came; below the cap nothing changes. A context of another type
// (Synchronization, Schedule, Group, onStartup) of the hook starts the
// count again after it, so that no event moves before it.

// MaxObjectContexts is the most Event contexts of one object that wait for
// one hook in a queue, and that one run of the hook receives.
const MaxObjectContexts = 8

// objectKey names an object's Event contexts for one hook in a queue: its
// binding (a binding's objects are its own), namespace and name, and the
// task's Key (set for the hooks with parallelism).
type objectKey struct {
	hook                     *hook.Hook
	key                      string
	binding, namespace, name string
}

// objectKeyOf returns the key of t when t is one object's Event context
// alone, which is what a watch event queues.
func objectKeyOf(t *Task) (objectKey, bool) {
	if len(t.Contexts) != 1 {
		return objectKey{}, false
	}
	c := &t.Contexts[0]
	if c.Type != binding.TypeEvent || c.Object == nil {
		return objectKey{}, false
	}
	return objectKey{hook: t.Hook, key: t.Key, binding: c.Binding, namespace: c.Object.Namespace, name: c.Object.Name}, true
}

// waitingObject is what waits of one object: its last pending task, and
// how many of its contexts wait (at most MaxObjectContexts).
type waitingObject struct {
	last *Task
	n    int
	// epoch is the hook's epoch in the queue (fifo.epochs) when the
	// count began: a later one means a context of another type came
	// after, and the count starts again.
	epoch uint64
}

// objectsLocked is q's count of its objects' waiting contexts, made on
// first use.
func (q *fifo) objectsLocked() map[objectKey]*waitingObject {
	if q.objects == nil {
		q.objects = map[objectKey]*waitingObject{}
		q.epochs = map[*hook.Hook]uint64{}
	}
	return q.objects
}

// supersedeLocked adds the pushed task t to q's count of its object's
// waiting contexts, or, when MaxObjectContexts of them wait already, puts
// t's context in place of the last of them and returns true: t is then
// not queued, and its callbacks and trace go with the task that took it.
func (s *Set) supersedeLocked(q *fifo, t *Task) bool {
	objects := q.objectsLocked()
	k, ok := objectKeyOf(t)
	if !ok {
		q.epochs[t.Hook]++
		return false
	}
	epoch := q.epochs[t.Hook]
	w := objects[k]
	if w == nil || !w.last.waiting || w.epoch != epoch {
		if w != nil {
			w.last.waiting = false
		}
		objects[k] = &waitingObject{last: t, n: 1, epoch: epoch}
		t.waiting = true
		return false
	}
	if w.n < MaxObjectContexts {
		w.last.waiting = false
		w.last, w.n = t, w.n+1
		t.waiting = true
		return false
	}
	s.noteSupersededLocked(q, k)
	s.Metrics.Combined(t.Hook.Name, q.name, 1)
	w.last.Contexts[0] = t.Contexts[0]
	s.takeOverLocked(w.last, t)
	return true
}

// forgetLocked lets go of t, which leaves q's pending tasks (it runs, is
// merged into the task that runs, or is dropped), in q's count of its
// object's contexts.
func (q *fifo) forgetLocked(t *Task) {
	if !t.waiting {
		return
	}
	t.waiting = false
	if k, ok := objectKeyOf(t); ok && q.objects[k] != nil && q.objects[k].last == t {
		delete(q.objects, k)
	}
}

// noteSupersededLocked logs, a few times a minute at most, that an
// object's contexts reached the cap.
func (s *Set) noteSupersededLocked(q *fifo, k objectKey) {
	if !s.supersededLog.Allow() {
		return
	}
	s.log.WithFields(logrus.Fields{
		"hook": k.hook.Name, "queue": q.name, "binding": k.binding, "object": k.namespace + "/" + k.name, "waiting": MaxObjectContexts,
	}).Warn("an object's events pile up while its hook is held or slow: its newest event replaces the last one waiting (sampled)")
}

// objectCap keeps the contexts of one run within MaxObjectContexts an
// object as tasks merge into it (capLocked).
type objectCap struct {
	last map[objectKey]int // index in the run's contexts of an object's last
	n    map[objectKey]int
}

// newObjectCap counts the contexts of head, about to take others.
func newObjectCap(head *Task) *objectCap {
	c := &objectCap{last: map[objectKey]int{}, n: map[objectKey]int{}}
	for i := range head.Contexts {
		c.add(head, i)
	}
	return c
}

// add counts the i-th context of head, just added.
func (c *objectCap) add(head *Task, i int) {
	k, ok := contextKey(head, &head.Contexts[i])
	if !ok {
		clear(c.last) // no later event moves before a context of another type
		clear(c.n)
		return
	}
	c.last[k] = i
	c.n[k]++
}

// place returns where in head's contexts ctx goes in place of the last of
// its object's, when MaxObjectContexts of them are there already.
func (c *objectCap) place(head *Task, ctx *binding.Context) (int, bool) {
	k, ok := contextKey(head, ctx)
	if !ok || c.n[k] < MaxObjectContexts {
		return 0, false
	}
	return c.last[k], true
}

func contextKey(head *Task, c *binding.Context) (objectKey, bool) {
	if c.Type != binding.TypeEvent || c.Object == nil {
		return objectKey{}, false
	}
	return objectKey{hook: head.Hook, key: head.Key, binding: c.Binding, namespace: c.Object.Namespace, name: c.Object.Name}, true
}
