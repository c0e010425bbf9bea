package operator

import (
	"fmt"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Requeue is the watchEvent of a run that a hook asked for with a Requeue
// operation (extension).
const Requeue = "Requeue"

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

// RequeueRequest is a validated Requeue operation: run the hook for the
// object Namespace/Name of Binding again, After from now.
type RequeueRequest struct {
	Binding         *watch.Binding
	Namespace, Name string
	After           time.Duration
}

// resolveRequeues finds the binding each Requeue operation of h refers to:
// the one it names, else the hook's only kubernetes binding, else the one
// watching its kind. Errors fail the run before anything is applied.
func (e *Executor) resolveRequeues(h *hook.Hook, operations []ops.Operation) ([]RequeueRequest, error) {
	var out []RequeueRequest
	for _, op := range operations {
		if op.Type != ops.Requeue {
			continue
		}
		var candidates []*watch.Binding
		for _, b := range e.Objects.Bindings() {
			if b.Hook != h {
				continue
			}
			switch {
			case op.Binding != "":
				if b.Name() == op.Binding {
					candidates = append(candidates, b)
				}
			case op.Kind != "":
				if res, err := e.Resolver.Resolve(op.APIVersion, op.Kind); err == nil && res.GVR == b.Resource().GVR {
					candidates = append(candidates, b)
				}
			default:
				candidates = append(candidates, b)
			}
		}
		if len(candidates) != 1 {
			return nil, fmt.Errorf("operation %d (%s): %d kubernetes bindings of the hook match; name one in the binding field", op.Index, op.String(), len(candidates))
		}
		out = append(out, RequeueRequest{Binding: candidates[0], Namespace: op.Namespace, Name: op.Name, After: op.After})
	}
	return out, nil
}

// schedule arms t's timer; when it fires, the object (if the binding still
// holds it) is queued as a Requeue event.
func (r *requeues) schedule(t RequeueRequest, fire func(RequeueRequest)) {
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
func (o *Operator) fireRequeue(t RequeueRequest) {
	c, ok := RequeueContext(t)
	if !ok {
		o.log.WithFields(map[string]any{"hook": t.Binding.Hook.Name, "binding": t.Binding.Name(), "object": t.Namespace + "/" + t.Name}).
			Debug("requeued object is gone; nothing to run")
		return
	}
	o.push(t.Binding.Hook, &t.Binding.Config().Common, c, nil)
}

// RequeueContext is the context of a Requeue request that fell due: a
// Requeue event of the object, or a Finalize event when the object is
// being deleted and still held by the binding's finalizer (a Finalize run
// that requeues keeps the finalizer). It is false when the binding no
// longer holds the object.
func RequeueContext(r RequeueRequest) (binding.Context, bool) {
	obj, ok := r.Binding.Get(r.Namespace, r.Name)
	if !ok {
		return binding.Context{}, false
	}
	event := Requeue
	if r.Binding.Finalizing(r.Namespace, r.Name) {
		event = watch.Finalize
	}
	return binding.Context{Binding: r.Binding.Name(), Type: binding.TypeEvent, WatchEvent: event, Object: &obj}, true
}
