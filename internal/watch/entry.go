package watch

import (
	"encoding/json"
	"slices"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/jsonenc"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// entry is what the watch cache keeps per object instead of the object:
// its identity, the full object's JSON only when a binding needs it, and
// each attached binding's jqFilter result. Entries are immutable once
// stored; an update replaces the entry.
type entry struct {
	objectMeta
	// results[i] is the filterResult JSON for the informer's i-th binding
	// (nil when that binding has no jqFilter).
	results []json.RawMessage
	// more holds what only some bindings need, nil when none of the
	// informer's does: an entry of a binding with a jqFilter and without
	// full objects stays as small as it can be.
	more *entryMore
	// deleting is set once the object has a deletionTimestamp.
	deleting bool
	// shardHash is the hash of the object's shard key, for sharded
	// bindings (see shards); zero otherwise.
	shardHash uint64
}

// entryMore is the part of an entry that only some bindings need.
type entryMore struct {
	// full is the JSON of the whole object (object keys sorted, as contexts
	// print it), or nil when no binding keeps full objects. JSON takes a
	// fraction of the memory of the decoded object and goes into contexts
	// as is.
	full json.RawMessage
	// finalizers are kept only when a binding of the informer manages one.
	finalizers []string
}

// full returns the object's JSON, or nil when the entry does not keep it.
func (e *entry) full() json.RawMessage {
	if e.more == nil {
		return nil
	}
	return e.more.full
}

// newEntry makes the entry of u for bindings (in slot order), running each
// binding's jqFilter once. keepFull keeps the object's JSON; finalizers keeps
// its finalizers. u's map is normalized in place and not kept.
func newEntry(u *unstructured.Unstructured, bindings []*Binding, keepFull, finalizers bool) *entry {
	m := u.Object
	jq.Normalize(m)
	e := &entry{results: make([]json.RawMessage, len(bindings))}
	// The objects of a namespace share one copy of its name.
	e.Name, e.Namespace = u.GetName(), unique.Make(u.GetNamespace()).Value()
	e.ResourceVersion = u.GetResourceVersion()
	e.deleting = u.GetDeletionTimestamp() != nil
	for _, b := range bindings {
		if b.shard != nil {
			e.shardHash = shard.Key(b.shard.by, e.Namespace, string(u.GetUID()))
			break
		}
	}
	if finalizers || keepFull {
		e.more = &entryMore{}
	}
	if finalizers {
		e.more.finalizers = u.GetFinalizers()
	}
	// Timed only for shell-operator's kube_jq_filter_duration_seconds.
	timed := len(bindings) > 0 && bindings[0].metrics.TimesWatchEvents()
	var start time.Time
	for n, b := range bindings {
		if b.cfg.Filter == nil {
			continue
		}
		if timed {
			start = time.Now()
		}
		res, err := b.cfg.Filter.ResultJSON(m)
		if timed {
			b.metrics.FilterRan(b.Hook.Name, b.cfg.Name, b.cfg.Queue, time.Since(start))
		}
		if err != nil {
			b.log.WithError(err).WithField("object", e.Namespace+"/"+e.Name).Error("jqFilter failed; filterResult is null")
			res = []byte("null")
		}
		e.results[n] = res
	}
	if keepFull {
		if timed {
			start = time.Now()
		}
		full, err := jsonenc.Marshal(m)
		if err != nil {
			for _, b := range bindings {
				b.log.WithError(err).WithField("object", e.Namespace+"/"+e.Name).Error("object is not JSON; contexts carry no object")
			}
		}
		e.more.full = full
		if timed {
			// What a binding without a jqFilter keeps of the object.
			d := time.Since(start)
			for _, b := range bindings {
				if b.cfg.Filter == nil {
					b.metrics.FilterRan(b.Hook.Name, b.cfg.Name, b.cfg.Queue, d)
				}
			}
		}
	}
	return e
}

// objectMeta is the metadata an entry keeps: a fifth of the size of
// metav1.ObjectMeta, which would be mostly empty fields in every one of
// possibly hundreds of thousands of entries. It implements metav1.Object
// for client-go's cache, which reads the name, namespace and
// resourceVersion of what it stores (not the uid: the cache identifies
// objects by namespace and name); the rest reads as empty. Entries are
// read-only: the setters panic, so that a caller that would change a stored
// object is found rather than silently ignored.
type objectMeta struct {
	Name, Namespace, ResourceVersion string
}

var _ metav1.Object = (*objectMeta)(nil)

func (m *objectMeta) GetNamespace() string                        { return m.Namespace }
func (m *objectMeta) GetName() string                             { return m.Name }
func (m *objectMeta) GetGenerateName() string                     { return "" }
func (m *objectMeta) GetUID() types.UID                           { return "" }
func (m *objectMeta) GetResourceVersion() string                  { return m.ResourceVersion }
func (m *objectMeta) GetGeneration() int64                        { return 0 }
func (m *objectMeta) GetSelfLink() string                         { return "" }
func (m *objectMeta) GetCreationTimestamp() metav1.Time           { return metav1.Time{} }
func (m *objectMeta) GetDeletionTimestamp() *metav1.Time          { return nil }
func (m *objectMeta) GetDeletionGracePeriodSeconds() *int64       { return nil }
func (m *objectMeta) GetLabels() map[string]string                { return nil }
func (m *objectMeta) GetAnnotations() map[string]string           { return nil }
func (m *objectMeta) GetFinalizers() []string                     { return nil }
func (m *objectMeta) GetOwnerReferences() []metav1.OwnerReference { return nil }
func (m *objectMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}

func readOnly() { panic("watch: a cached entry's metadata is read-only") }

func (m *objectMeta) SetNamespace(string)                          { readOnly() }
func (m *objectMeta) SetName(string)                               { readOnly() }
func (m *objectMeta) SetGenerateName(string)                       { readOnly() }
func (m *objectMeta) SetUID(types.UID)                             { readOnly() }
func (m *objectMeta) SetResourceVersion(string)                    { readOnly() }
func (m *objectMeta) SetGeneration(int64)                          { readOnly() }
func (m *objectMeta) SetSelfLink(string)                           { readOnly() }
func (m *objectMeta) SetCreationTimestamp(metav1.Time)             { readOnly() }
func (m *objectMeta) SetDeletionTimestamp(*metav1.Time)            { readOnly() }
func (m *objectMeta) SetDeletionGracePeriodSeconds(*int64)         { readOnly() }
func (m *objectMeta) SetLabels(map[string]string)                  { readOnly() }
func (m *objectMeta) SetAnnotations(map[string]string)             { readOnly() }
func (m *objectMeta) SetFinalizers([]string)                       { readOnly() }
func (m *objectMeta) SetOwnerReferences([]metav1.OwnerReference)   { readOnly() }
func (m *objectMeta) SetManagedFields([]metav1.ManagedFieldsEntry) { readOnly() }

// hasFinalizer reports whether the object holds finalizer f.
func (e *entry) hasFinalizer(f string) bool {
	return e.more != nil && slices.Contains(e.more.finalizers, f)
}

// GetObjectKind implements runtime.Object; entries carry no type information.
func (e *entry) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. Entries are never modified after
// they are stored, so a shallow copy is a safe copy.
func (e *entry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}
