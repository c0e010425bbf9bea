package watch

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// entry is what the watch cache keeps per object instead of the object:
// its identity, the full object only when a binding needs it, and each
// attached binding's jqFilter result. Entries are immutable once stored;
// an update replaces the entry.
type entry struct {
	metav1.ObjectMeta // only name, namespace, uid and resourceVersion are set
	// full is the whole object, or nil when no binding keeps full objects.
	full map[string]any
	// results[i] is the filterResult JSON for the informer's i-th binding
	// (nil when that binding has no jqFilter).
	results []json.RawMessage
	// deleting is set once the object has a deletionTimestamp.
	deleting bool
	// finalizers are kept only when a binding of the informer manages one.
	finalizers []string
}

// hasFinalizer reports whether the object holds finalizer f.
func (e *entry) hasFinalizer(f string) bool {
	for _, x := range e.finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// GetObjectKind implements runtime.Object; entries carry no type information.
func (e *entry) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. Entries are never modified after
// they are stored, so a shallow copy is a safe copy.
func (e *entry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}
