package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/recorder"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// HeldReason is the reason of the Event about a binding whose runs wait
// for another binding whose kind is not served.
const HeldReason = "BindingWaitsForKind"

// heldWhy says what a Held binding b waits for, or "" when it waits for
// nothing: the binding whose kind is not served that holds it (b's runs
// carry its snapshot, or that of a binding it holds), with why its kind
// is not served, or else the bindings it waits for.
func heldWhy(w bindingLookup, b *watch.Binding) string {
	names, unserved := b.HeldBy()
	if unserved != "" {
		why := "its kind is not served"
		if u := w.Binding(b.Hook.Name, unserved); u != nil && u.Waiting() != "" {
			why += ": " + u.Waiting()
		}
		return fmt.Sprintf("it waits for binding %s (%s)", unserved, why)
	}
	if len(names) > 0 {
		return "it waits for binding(s) " + strings.Join(names, ", ") + " to list"
	}
	return ""
}

// bindingLookup finds a hook's kubernetes binding by name.
type bindingLookup interface {
	Binding(hookName, name string) *watch.Binding
}

// stalled reports whether b waits for a binding whose kind is not served:
// start-up does not wait for it, as it waits for no binding that is not
// served.
func stalled(b *watch.Binding) bool {
	_, unserved := b.HeldBy()
	return unserved != ""
}

// reportHeld logs, and records as an Event on the operator's Pod, every
// binding held by one whose kind is not served, once each time it becomes
// held, until ctx ends.
func (o *Operator) reportHeld(ctx context.Context) {
	reported := map[*watch.Binding]string{} // the bindings held now, and by which
	for {
		changed := o.watcher.Changed()
		now := map[*watch.Binding]string{}
		for _, b := range o.watcher.Bindings() {
			_, unserved := b.HeldBy()
			if unserved == "" {
				continue
			}
			now[b] = unserved
			if reported[b] == unserved {
				continue
			}
			msg := fmt.Sprintf("hook %s: binding %s does not run: %s; its runs wait until that kind is served and listed", b.Hook.Name, b.Name(), heldWhy(o.watcher, b))
			o.log.WithFields(logrus.Fields{"hook": b.Hook.Name, "binding": b.Name(), "waitsFor": unserved}).Warn(msg)
			o.podEvent(HeldReason, msg)
		}
		reported = now
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// podEvent records a Warning Event on the operator's Pod, when it runs in
// one and writes Events.
func (o *Operator) podEvent(reason, msg string) {
	pod := o.opts.Pod
	if o.events == nil || pod.Name == "" || pod.Namespace == "" {
		return
	}
	// Hook and binding names come from the hooks folder: their control
	// characters are escaped, as in the log.
	msg = limit.Printable(msg)
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	o.events.Record(recorder.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: types.UID(pod.UID)}, reason, msg)
}
