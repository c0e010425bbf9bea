package operator

import (
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/executor"
)

// requeues holds the timers of pending Requeue requests, one per hook,
// binding and object: a new request replaces a later one and is dropped
// for an earlier one, so polling hooks never pile up runs.
type requeues struct {
	mu      sync.Mutex
	pending map[string]*pendingRequeue
	stopped bool
}

type pendingRequeue struct {
	at    time.Time
	timer *time.Timer
}

// schedule arms t's timer; when it fires, the object (if the binding still
// holds it) is queued as a Requeue event.
func (r *requeues) schedule(t executor.RequeueRequest, fire func(executor.RequeueRequest)) {
	key := t.Binding.Hook.Name + "\x00" + t.Binding.Name() + "\x00" + t.Namespace + "\x00" + t.Name
	at := time.Now().Add(t.After)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.pending == nil {
		r.pending = map[string]*pendingRequeue{}
	}
	if p := r.pending[key]; p != nil {
		if !p.at.After(at) {
			return
		}
		p.timer.Stop()
	}
	p := &pendingRequeue{at: at}
	p.timer = time.AfterFunc(t.After, func() {
		r.mu.Lock()
		if r.pending[key] == p {
			delete(r.pending, key)
		}
		r.mu.Unlock()
		fire(t)
	})
	r.pending[key] = p
}

func (r *requeues) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for _, p := range r.pending {
		p.timer.Stop()
	}
	r.pending = nil
}

// fireRequeue queues the Requeue event of t's object.
func (o *Operator) fireRequeue(t executor.RequeueRequest) {
	c, ok := executor.RequeueContext(t)
	if !ok {
		o.log.WithFields(map[string]any{"hook": t.Binding.Hook.Name, "binding": t.Binding.Name(), "object": t.Namespace + "/" + t.Name}).
			Debug("requeued object is gone; nothing to run")
		return
	}
	o.push(t.Binding.Hook, &t.Binding.Config().Common, c, nil)
}
