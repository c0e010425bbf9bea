package operator

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/queue"
)

// EventReason is the reason of the Kubernetes Events about failed runs.
const EventReason = "HookFailed"

// maxEventObjects bounds the objects one failed run leaves Events on.
const maxEventObjects = 5

// maxEventMessage bounds an Event's message (the API server's limit for
// events.k8s.io is 1 kB).
const maxEventMessage = 1000

// failureEvents records a Warning Event on each object a failed run was
// about. client-go's correlator rate-limits them per object (a burst of 25,
// then one per 5 minutes) and folds repeats into one Event with a count,
// so a failing loop cannot flood the API server.
type failureEvents struct {
	recorder    record.EventRecorder
	broadcaster record.EventBroadcaster
}

func newFailureEvents(clients *kube.Clients) *failureEvents {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients.Typed.CoreV1().Events("")})
	return &failureEvents{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "hook-operator"}),
	}
}

func (f *failureEvents) stop() { f.broadcaster.Shutdown() }

// failed is the Executor's Failed callback.
func (o *Operator) failed(t *queue.Task, err error) {
	if o.events == nil {
		return
	}
	refs := o.objectsOf(t)
	if len(refs) == 0 {
		return
	}
	msg := fmt.Sprintf("%v", err)
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	for _, ref := range refs {
		o.events.recorder.Event(ref, corev1.EventTypeWarning, EventReason, msg)
		o.opts.Metrics.KubeEvent(EventReason)
	}
}

// objectsOf returns references to the objects of t's Event contexts (at
// most maxEventObjects, each once).
func (o *Operator) objectsOf(t *queue.Task) []*corev1.ObjectReference {
	var out []*corev1.ObjectReference
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
		ref := &corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
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
