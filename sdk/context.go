package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Binding context types, as BindingContext.Type carries them. A start-up
// context has no type; its Binding is BindingOnStartup.
const (
	TypeSynchronization = "Synchronization"
	TypeEvent           = "Event"
	TypeGroup           = "Group"
	TypeSchedule        = "Schedule"
)

// BindingOnStartup is the Binding of the context of an onStartup run.
const BindingOnStartup = "onStartup"

// BindingContext is one element of the array the runtime writes to
// $BINDING_CONTEXT_PATH: why the hook runs. Which fields are set depends on
// Type (docs/binding-contexts.md):
//
//   - onStartup: Binding only ("onStartup").
//   - Schedule: Binding, Type.
//   - Synchronization: Binding, Type, Objects (empty when nothing matches).
//   - Event: Binding, Type, WatchEvent, Object and/or FilterResult.
//   - Group: Binding, Type, GroupName, Snapshots.
//
// Snapshots is also set for bindings with includeSnapshotsFrom.
type BindingContext struct {
	// Binding is the name of the binding that fired.
	Binding string `json:"binding"`
	// Type is one of the Type constants, or empty for onStartup.
	Type string `json:"type,omitempty"`
	// GroupName is the group of a Group context.
	GroupName string `json:"groupName,omitempty"`
	// WatchEvent is the event of an Event context: EventAdded,
	// EventModified, EventDeleted, or the extensions EventFinalize and
	// EventRequeue.
	WatchEvent string `json:"watchEvent,omitempty"`
	// Object is the object of an Event context, as it was at the event (for
	// Deleted, its last known state). It is nil when the binding keeps no
	// full objects (keepFullObjectsInMemory: false).
	Object *Object `json:"object,omitempty"`
	// FilterResult is the jqFilter's output for Object, as JSON. It is nil
	// when the binding has no jqFilter; a filter without output gives the
	// JSON null.
	FilterResult json.RawMessage `json:"filterResult,omitempty"`
	// Objects are the objects of a Synchronization context, sorted by
	// namespace, then name.
	Objects []ObjectAndFilter `json:"objects,omitempty"`
	// Snapshots maps binding names to their current objects, sorted by
	// namespace, then name, as of the moment the hook started.
	Snapshots map[string][]ObjectAndFilter `json:"snapshots,omitempty"`
}

// ObjectAndFilter is one object as a binding delivers it: in
// Synchronization objects and in snapshots.
type ObjectAndFilter struct {
	// Object is the whole object, or nil when the binding keeps no full
	// objects (keepFullObjectsInMemory: false).
	Object *Object `json:"object,omitempty"`
	// FilterResult is the jqFilter's output as JSON, or nil when the binding
	// has no jqFilter.
	FilterResult json.RawMessage `json:"filterResult,omitempty"`
}

// Object is a whole Kubernetes object from a binding context. It embeds
// unstructured.Unstructured, so GetName, GetNamespace, GetLabels,
// GetGeneration and unstructured.NestedString(o.Object, ...) work on it, and
// Decode turns it into a typed struct.
type Object struct {
	unstructured.Unstructured
}

// UnmarshalJSON reads any JSON object, with or without apiVersion and kind
// (unstructured.Unstructured alone insists on kind). Whole numbers become
// int64, as unstructured helpers expect.
func (o *Object) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("object is null")
	}
	o.Object = m
	return nil
}

// MarshalJSON writes the object's JSON.
func (o Object) MarshalJSON() ([]byte, error) {
	return json.Marshal(o.Object)
}

// Decode decodes the object into v, a pointer to a typed struct such as
// *appsv1.Deployment (or anything JSON decodes into).
func (o *Object) Decode(v any) error {
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding %s: %w", o.describe(), err)
	}
	return nil
}

// Ref returns the object's apiVersion, kind, namespace and name, to name it
// in an operation: Delete(o.Ref()), or as the parent of Apply.
func (o *Object) Ref() Ref {
	return Ref{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (o *Object) describe() string {
	s := strings.TrimSpace(o.GetKind() + " " + qualified(o.GetNamespace(), o.GetName()))
	if s == "" {
		return "object"
	}
	return s
}

// Decode decodes the object into v, a pointer to a typed struct such as
// *appsv1.Deployment. It fails when the binding keeps no full objects.
func (o ObjectAndFilter) Decode(v any) error {
	if o.Object == nil {
		return errors.New("no object to decode: the binding keeps only filter results (keepFullObjectsInMemory: false); decode FilterResult with DecodeFilterResult, or drop keepFullObjectsInMemory")
	}
	return o.Object.Decode(v)
}

// DecodeFilterResult decodes the jqFilter's output into v. It fails when the
// binding has no jqFilter.
func (o ObjectAndFilter) DecodeFilterResult(v any) error {
	return decodeFilterResult(o.FilterResult, v)
}

// DecodeObject decodes the object of an Event context into v, as
// ObjectAndFilter.Decode does.
func (c BindingContext) DecodeObject(v any) error {
	return ObjectAndFilter{Object: c.Object}.Decode(v)
}

// DecodeFilterResult decodes the filter result of an Event context into v,
// as ObjectAndFilter.DecodeFilterResult does.
func (c BindingContext) DecodeFilterResult(v any) error {
	return decodeFilterResult(c.FilterResult, v)
}

func decodeFilterResult(raw json.RawMessage, v any) error {
	if raw == nil {
		return errors.New("no filter result to decode: the binding has no jqFilter")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding filter result %s: %w", shorten(string(raw), 200), err)
	}
	return nil
}

// Snapshot returns the current objects of the kubernetes binding name, as
// the context carries them (see Snapshots), or nil when it carries no such
// snapshot.
func (c BindingContext) Snapshot(name string) []ObjectAndFilter {
	return c.Snapshots[name]
}

// DecodeSnapshot decodes every object of the snapshot of binding name into a
// T, for example DecodeSnapshot[appsv1.Deployment](c, "deployments"). A
// context without that snapshot is an error, since it means the binding is
// not in the context's group or includeSnapshotsFrom (or is misspelt).
func DecodeSnapshot[T any](c BindingContext, name string) ([]T, error) {
	return decodeSnapshot[T](c, name, ObjectAndFilter.Decode)
}

// DecodeSnapshotFilterResults decodes the filter result of every object of
// the snapshot of binding name into a T: for bindings with a jqFilter,
// typically with keepFullObjectsInMemory: false. A context without that
// snapshot is an error, as for DecodeSnapshot.
func DecodeSnapshotFilterResults[T any](c BindingContext, name string) ([]T, error) {
	return decodeSnapshot[T](c, name, ObjectAndFilter.DecodeFilterResult)
}

func decodeSnapshot[T any](c BindingContext, name string, decode func(ObjectAndFilter, any) error) ([]T, error) {
	objs, ok := c.Snapshots[name]
	if !ok {
		return nil, fmt.Errorf("the context of binding %q carries no snapshot %q (%s); add %q to the binding's includeSnapshotsFrom, or put both bindings in one group",
			c.Binding, name, snapshotNames(c.Snapshots), name)
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		if err := decode(o, &out[i]); err != nil {
			return nil, fmt.Errorf("snapshot %q, object %d: %w", name, i, err)
		}
	}
	return out, nil
}

func snapshotNames(s map[string][]ObjectAndFilter) string {
	if len(s) == 0 {
		return "it carries none"
	}
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return "it has " + strings.Join(names, ", ")
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
