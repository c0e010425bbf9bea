package operator

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/recorder"
)

// EventReason is the reason of the Kubernetes Events about failed runs.
const EventReason = "HookFailed"

// maxEventObjects bounds the objects one failed run leaves Events on.
const maxEventObjects = 5

// maxEventMessage bounds an Event's message (the API server's limit for
// events.k8s.io is 1 kB).
const maxEventMessage = 1000

// failed is the executor's Failed callback (executor.Executor.Failed).
func (o *Operator) failed(t *queue.Task, err error) {
	if o.events == nil {
		return
	}
	refs := o.objectsOf(t)
	if len(refs) == 0 {
		return
	}
	msg := failedMessage(t, err)
	for _, ref := range refs {
		o.events.Record(ref, EventReason, msg)
	}
}

// failedMessage is the message of the Events about t's failed run: which
// hook, bindings and attempt, and what failed, in the operator's words
// only. Never the error itself: it may end with the hook's stderr, and
// Events are read by more people than can read the Secrets a hook reads.
func failedMessage(t *queue.Task, err error) string {
	msg := fmt.Sprintf("hook %s failed (binding %s, attempt %d): %s; see the operator's log for its output",
		t.Hook.Name, executor.BindingNames(t.Contexts), t.Attempts()+1, executor.PublicReason(err))
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	return msg
}

// objectsOf returns references to the objects of t's Event contexts (at
// most maxEventObjects, each once).
func (o *Operator) objectsOf(t *queue.Task) []recorder.ObjectRef {
	var out []recorder.ObjectRef
	seen := map[string]bool{}
	for _, c := range t.Contexts {
		if c.Object == nil || len(out) == maxEventObjects {
			continue
		}
		b := o.watcher.Binding(t.Hook.Name, c.Binding)
		if b == nil {
			continue
		}
		gvk := b.Resource().GVK
		key := strings.Join([]string{gvk.String(), c.Object.Namespace, c.Object.Name}, "/")
		if seen[key] {
			continue
		}
		seen[key] = true
		ref := recorder.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
		if c.Object.Raw != nil {
			var obj struct {
				Metadata struct {
					UID types.UID `json:"uid"`
				} `json:"metadata"`
			}
			if json.Unmarshal(c.Object.Raw, &obj) == nil {
				ref.UID = obj.Metadata.UID
			}
		}
		out = append(out, ref)
	}
	return out
}
