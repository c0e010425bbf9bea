package executor

import (
	"fmt"
	"time"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Requeue is the watchEvent of a run that a hook asked for with a Requeue
// operation (extension).
const Requeue = "Requeue"

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
