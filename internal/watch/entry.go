package watch

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/jsonenc"
)

// entry is what the watch cache keeps per object instead of the object:
// its identity, the full object's JSON only when a binding needs it, and
// each attached binding's jqFilter result. Entries are immutable once
// stored; an update replaces the entry.
type entry struct {
	metav1.ObjectMeta // only name, namespace, uid and resourceVersion are set
	// full is the JSON of the whole object (object keys sorted, as contexts
	// print it), or nil when no binding keeps full objects. JSON takes a
	// fraction of the memory of the decoded object and goes into contexts
	// as is.
	full json.RawMessage
	// results[i] is the filterResult JSON for the informer's i-th binding
	// (nil when that binding has no jqFilter).
	results []json.RawMessage
	// deleting is set once the object has a deletionTimestamp.
	deleting bool
	// finalizers are kept only when a binding of the informer manages one.
	finalizers []string
}

// newEntry makes the entry of u for bindings (in slot order), running each
// binding's jqFilter once. keepFull keeps the object's JSON; finalizers keeps
// its finalizers. u's map is normalized in place and not kept.
func newEntry(u *unstructured.Unstructured, bindings []*Binding, keepFull, finalizers bool) *entry {
	m := u.Object
	jq.Normalize(m)
	e := &entry{results: make([]json.RawMessage, len(bindings))}
	e.Name, e.Namespace = u.GetName(), u.GetNamespace()
	e.UID, e.ResourceVersion = u.GetUID(), u.GetResourceVersion()
	e.deleting = u.GetDeletionTimestamp() != nil
	if finalizers {
		e.finalizers = u.GetFinalizers()
	}
	for n, b := range bindings {
		if b.cfg.Filter == nil {
			continue
		}
		res, err := b.cfg.Filter.ResultJSON(m)
		if err != nil {
			b.log.WithError(err).WithField("object", e.Namespace+"/"+e.Name).Error("jqFilter failed; filterResult is null")
			res = []byte("null")
		}
		e.results[n] = res
	}
	if keepFull {
		full, err := jsonenc.Marshal(m)
		if err != nil {
			for _, b := range bindings {
				b.log.WithError(err).WithField("object", e.Namespace+"/"+e.Name).Error("object is not JSON; contexts carry no object")
			}
		}
		e.full = full
	}
	return e
}

// hasFinalizer reports whether the object holds finalizer f.
func (e *entry) hasFinalizer(f string) bool { return slices.Contains(e.finalizers, f) }

// GetObjectKind implements runtime.Object; entries carry no type information.
func (e *entry) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. Entries are never modified after
// they are stored, so a shallow copy is a safe copy.
func (e *entry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}
