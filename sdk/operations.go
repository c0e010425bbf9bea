package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Operation types, as Operation.Type holds them and the "operation" field
// of the written operation carries them.
const (
	OpCreate             = "Create"
	OpCreateIfNotExists  = "CreateIfNotExists"
	OpCreateOrUpdate     = "CreateOrUpdate"
	OpDelete             = "Delete"
	OpDeleteInBackground = "DeleteInBackground"
	OpDeleteNonCascading = "DeleteNonCascading"
	OpMergePatch         = "MergePatch"
	OpJSONPatch          = "JSONPatch"
	OpJQPatch            = "JQPatch"
	OpApply              = "Apply"
	OpApplySet           = "ApplySet"
	OpStatus             = "Status"
	OpRequeue            = "Requeue"
)

// Ref names one object: the target of deletes, patches, Status and Requeue,
// and the parent of Apply and ApplySet. APIVersion may be empty (the kind's
// preferred version); Kind may be a kind, plural or short name in any case;
// Namespace is required exactly for namespaced kinds.
type Ref struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// String reads like "apps/v1/Deployment app/web".
func (r Ref) String() string {
	s := r.Kind
	if r.APIVersion != "" {
		s = r.APIVersion + "/" + s
	}
	return strings.TrimSpace(s + " " + qualified(r.Namespace, r.Name))
}

// Operation is one object operation for the runtime to apply after the hook
// succeeds. Make it with the function of its type (Create, MergePatch,
// Apply, ...), which fills the fields the type needs; the With... methods
// set the optional ones. It marshals exactly as docs/operations.md ("Object
// operations") specifies, with only the fields its type uses.
//
// Objects, patches and statuses may be any value that marshals to a JSON
// object: a typed struct such as appsv1.Deployment (with its TypeMeta set,
// since the runtime needs the kind), an *unstructured.Unstructured, an
// *Object from a binding context, or a map[string]any.
type Operation struct {
	// Type is one of the Op constants.
	Type string
	// Target names the object of deletes, patches, Status and Requeue. The
	// create types and Apply take it from Object.
	Target Ref
	// Subresource makes a patch write a subresource ("status", "scale").
	Subresource string
	// Object is the object of the create types and of Apply.
	Object any
	// Patch is the merge patch (an object) of MergePatch, or the JSON patch
	// (a list of steps, e.g. []JSONPatchStep) of JSONPatch.
	Patch any
	// JQFilter is the program of JQPatch.
	JQFilter string
	// IgnoreMissingObject makes patches and Status succeed when the object
	// does not exist.
	IgnoreMissingObject bool

	// Parent owns Apply's object (optional) or ApplySet's objects.
	Parent *Ref
	// Force makes Apply and ApplySet take over fields other managers own.
	Force bool
	// SetName is ApplySet's name.
	SetName string
	// Objects is ApplySet's complete set of objects; empty deletes them all.
	Objects []any
	// Owner gives ApplySet's objects a controller reference to the parent;
	// ApplySet sets it, WithoutOwner clears it.
	Owner bool

	// Status is what Status merges into the object's .status.
	Status any
	// ObservedGeneration makes Status set status.observedGeneration to the
	// object's metadata.generation.
	ObservedGeneration bool

	// After is how long Requeue waits: more than 0, at most 24h.
	After time.Duration
	// Binding names the kubernetes binding Requeue runs; empty lets the
	// runtime pick the only one (or the one watching Target.Kind).
	Binding string
}

// JSONPatchStep is one step of an RFC 6902 JSON patch.
type JSONPatchStep struct {
	// Op is add, remove, replace, move, copy or test.
	Op string `json:"op"`
	// Path is a JSON pointer such as /spec/replicas (~1 stands for /).
	Path string `json:"path"`
	// Value is needed by add, replace and test, and written for them even
	// when nil (as null).
	Value any `json:"value,omitempty"`
	// From is needed by move and copy.
	From string `json:"from,omitempty"`
}

// MarshalJSON writes the members the step's op uses.
func (s JSONPatchStep) MarshalJSON() ([]byte, error) {
	type plain JSONPatchStep // without this method
	switch s.Op {
	case "add", "replace", "test":
		return json.Marshal(struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}{s.Op, s.Path, s.Value})
	}
	return json.Marshal(plain(s))
}

// Create creates obj; it fails (and so fails the run) when obj exists.
func Create(obj any) Operation { return Operation{Type: OpCreate, Object: obj} }

// CreateIfNotExists creates obj unless it exists; an existing object is
// left as it is.
func CreateIfNotExists(obj any) Operation { return Operation{Type: OpCreateIfNotExists, Object: obj} }

// CreateOrUpdate creates obj, or replaces the existing object with it (its
// status excepted).
func CreateOrUpdate(obj any) Operation { return Operation{Type: OpCreateOrUpdate, Object: obj} }

// Delete deletes the object with foreground propagation and waits until it
// is gone; a missing object is success.
func Delete(target Ref) Operation { return Operation{Type: OpDelete, Target: target} }

// DeleteInBackground deletes the object and leaves its dependents to the
// garbage collector; a missing object is success.
func DeleteInBackground(target Ref) Operation {
	return Operation{Type: OpDeleteInBackground, Target: target}
}

// DeleteNonCascading deletes the object and orphans its dependents; a
// missing object is success.
func DeleteNonCascading(target Ref) Operation {
	return Operation{Type: OpDeleteNonCascading, Target: target}
}

// MergePatch applies an RFC 7386 JSON merge patch (an object; a nil map
// value deletes a key) to the object.
func MergePatch(target Ref, patch any) Operation {
	return Operation{Type: OpMergePatch, Target: target, Patch: patch}
}

// JSONPatch applies an RFC 6902 JSON patch to the object.
func JSONPatch(target Ref, steps ...JSONPatchStep) Operation {
	if steps == nil {
		steps = []JSONPatchStep{} // no steps: a patch that changes nothing
	}
	return Operation{Type: OpJSONPatch, Target: target, Patch: steps}
}

// JQPatch replaces the object with the output of the jq program filter run
// on its current version, retried on conflicts.
func JQPatch(target Ref, filter string) Operation {
	return Operation{Type: OpJQPatch, Target: target, JQFilter: filter}
}

// Apply (extension) writes obj with server-side apply under the hook's own
// field manager: fields it applied before and no longer applies are removed.
// WithParent makes a parent its controller owner; WithForce takes over
// fields other managers own.
func Apply(obj any) Operation { return Operation{Type: OpApply, Object: obj} }

// ApplySet (extension) makes the set setName of parent's children exactly
// objects: each is applied as by Apply, with a controller owner reference to
// parent (unless WithoutOwner), and the set's objects not in objects are
// deleted. With no objects, every object of the set is deleted.
func ApplySet(parent Ref, setName string, objects ...any) Operation {
	return Operation{Type: OpApplySet, Parent: &parent, SetName: setName, Objects: objects, Owner: true}
}

// Status (extension) merges status into the object's .status (RFC 7386: a
// nil map value deletes a key) through the status subresource, and writes
// only if that changes it. WithObservedGeneration also records the
// generation the status describes.
func Status(target Ref, status any) Operation {
	return Operation{Type: OpStatus, Target: target, Status: status}
}

// Requeue (extension) runs the hook again for the object after the delay,
// with an EventRequeue context. ForBinding names the binding when the hook
// has several kubernetes bindings; Target's APIVersion and Kind are
// optional.
func Requeue(target Ref, after time.Duration) Operation {
	return Operation{Type: OpRequeue, Target: target, After: after}
}

// WithParent returns op with parent as the controller owner of Apply's
// object.
func (op Operation) WithParent(parent Ref) Operation {
	op.Parent = &parent
	return op
}

// WithForce returns op taking over fields other field managers own (Apply,
// ApplySet).
func (op Operation) WithForce() Operation {
	op.Force = true
	return op
}

// WithoutOwner returns the ApplySet without owner references to the parent:
// its objects outlive the parent, and are still pruned.
func (op Operation) WithoutOwner() Operation {
	op.Owner = false
	return op
}

// WithSubresource returns the patch writing to a subresource ("status",
// "scale") instead of the object.
func (op Operation) WithSubresource(name string) Operation {
	op.Subresource = name
	return op
}

// WithIgnoreMissingObject returns the patch or Status succeeding when the
// object does not exist.
func (op Operation) WithIgnoreMissingObject() Operation {
	op.IgnoreMissingObject = true
	return op
}

// WithObservedGeneration returns the Status also setting
// status.observedGeneration to the object's metadata.generation.
func (op Operation) WithObservedGeneration() Operation {
	op.ObservedGeneration = true
	return op
}

// ForBinding returns the Requeue running the kubernetes binding name.
func (op Operation) ForBinding(name string) Operation {
	op.Binding = name
	return op
}

// wire is an operation as written to $KUBERNETES_PATCH_PATH, in the field
// order of docs/operations.md.
type wire struct {
	Operation           string          `json:"operation"`
	APIVersion          string          `json:"apiVersion,omitempty"`
	Kind                string          `json:"kind,omitempty"`
	Namespace           string          `json:"namespace,omitempty"`
	Name                string          `json:"name,omitempty"` // ApplySet: the set's name
	Subresource         string          `json:"subresource,omitempty"`
	Parent              *Ref            `json:"parent,omitempty"`
	Object              json.RawMessage `json:"object,omitempty"`
	Objects             json.RawMessage `json:"objects,omitempty"`
	MergePatch          json.RawMessage `json:"mergePatch,omitempty"`
	JSONPatch           json.RawMessage `json:"jsonPatch,omitempty"`
	JQFilter            string          `json:"jqFilter,omitempty"`
	Status              json.RawMessage `json:"status,omitempty"`
	ObservedGeneration  bool            `json:"observedGeneration,omitempty"`
	Force               bool            `json:"force,omitempty"`
	Owner               *bool           `json:"owner,omitempty"`
	After               string          `json:"after,omitempty"`
	Binding             string          `json:"binding,omitempty"`
	IgnoreMissingObject bool            `json:"ignoreMissingObject,omitempty"`
}

// MarshalJSON writes the operation with the fields its type uses. It fails
// on what the runtime would refuse anyway and can be told here: an unknown
// type, or an object, patch or status that does not marshal to what its
// field needs.
func (op Operation) MarshalJSON() ([]byte, error) {
	w := wire{Operation: op.Type}
	var err error
	switch op.Type {
	case OpCreate, OpCreateIfNotExists, OpCreateOrUpdate:
		w.Object, err = marshalObject("object", op.Object)
	case OpApply:
		w.Parent, w.Force = op.Parent, op.Force
		w.Object, err = marshalObject("object", op.Object)
	case OpApplySet:
		if op.Parent == nil {
			return nil, errors.New("ApplySet: parent: required")
		}
		w.Name, w.Parent, w.Force = op.SetName, op.Parent, op.Force
		if !op.Owner {
			w.Owner = new(bool)
		}
		w.Objects, err = marshalObjects(op.Objects)
	case OpDelete, OpDeleteInBackground, OpDeleteNonCascading:
		w.setTarget(op.Target)
	case OpMergePatch:
		w.setPatchTarget(op)
		w.MergePatch, err = marshalKind("mergePatch", op.Patch, '{', "an object")
	case OpJSONPatch:
		w.setPatchTarget(op)
		w.JSONPatch, err = marshalKind("jsonPatch", op.Patch, '[', "a list of steps")
	case OpJQPatch:
		w.setPatchTarget(op)
		w.JQFilter = op.JQFilter
	case OpStatus:
		w.setTarget(op.Target)
		w.ObservedGeneration, w.IgnoreMissingObject = op.ObservedGeneration, op.IgnoreMissingObject
		w.Status, err = marshalKind("status", op.Status, '{', "an object")
	case OpRequeue:
		w.setTarget(op.Target)
		if op.After <= 0 {
			err = fmt.Errorf("after: %s is not more than 0; give a delay such as 30 * time.Second", op.After)
		}
		w.After, w.Binding = durationString(op.After), op.Binding
	default:
		return nil, fmt.Errorf("operation %q: unknown type; make operations with the functions of this package (Create, MergePatch, Apply ...)", op.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.describe(), err)
	}
	return json.Marshal(w)
}

func (w *wire) setTarget(r Ref) {
	w.APIVersion, w.Kind, w.Namespace, w.Name = r.APIVersion, r.Kind, r.Namespace, r.Name
}

func (w *wire) setPatchTarget(op Operation) {
	w.setTarget(op.Target)
	w.Subresource, w.IgnoreMissingObject = op.Subresource, op.IgnoreMissingObject
}

// describe names the operation in errors: "MergePatch v1/ConfigMap app/x".
func (op Operation) describe() string {
	switch op.Type {
	case OpCreate, OpCreateIfNotExists, OpCreateOrUpdate, OpApply:
		return op.Type
	case OpApplySet:
		return op.Type + " " + op.SetName
	}
	return op.Type + " " + op.Target.String()
}

// marshalObject marshals a Kubernetes object, which must have a kind.
func marshalObject(field string, obj any) (json.RawMessage, error) {
	data, err := marshalKind(field, obj, '{', "an object")
	if err != nil {
		return nil, err
	}
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if meta.Kind == "" {
		return nil, fmt.Errorf("%s: has no kind; set it (for a typed struct, its TypeMeta: metav1.TypeMeta{APIVersion: \"apps/v1\", Kind: \"Deployment\"})", field)
	}
	return data, nil
}

func marshalObjects(objs []any) (json.RawMessage, error) {
	list := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		data, err := marshalObject(fmt.Sprintf("objects[%d]", i), o)
		if err != nil {
			return nil, err
		}
		list[i] = data
	}
	return json.Marshal(list)
}

// marshalKind marshals v and checks that the JSON starts with want ('{' for
// an object, '[' for a list).
func marshalKind(field string, v any, want byte, what string) (json.RawMessage, error) {
	if v == nil {
		return nil, fmt.Errorf("%s: required", field)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if len(data) == 0 || data[0] != want {
		return nil, fmt.Errorf("%s: must be %s, got %s", field, what, shorten(string(data), 80))
	}
	return data, nil
}
