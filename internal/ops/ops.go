// Package ops parses the object operations a hook writes to the file at
// $KUBERNETES_PATCH_PATH (Create, Delete, MergePatch ... as shell-operator
// defines them, and the extensions Apply, ApplySet, Status and Requeue) and
// applies them to the cluster.
//
// Parsing and applying are separate so that the live runtime, dry-run and
// replay validate a file with the same code and differ only in where the
// operations go.
package ops

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/limit"
)

// The operation types, as written in the "operation" field.
const (
	Create             = "Create"
	CreateIfNotExists  = "CreateIfNotExists"
	CreateOrUpdate     = "CreateOrUpdate"
	Delete             = "Delete"
	DeleteInBackground = "DeleteInBackground"
	DeleteNonCascading = "DeleteNonCascading"
	MergePatch         = "MergePatch"
	JSONPatch          = "JSONPatch"
	JQPatch            = "JQPatch"

	// The extensions: operations shell-operator does not have. A file
	// without them means what it means to shell-operator.

	// Apply writes an object with server-side apply.
	Apply = "Apply"
	// ApplySet makes a parent's set of children exactly the given objects.
	ApplySet = "ApplySet"
	// Status merges into an object's status through its status subresource,
	// writing only when that changes it.
	Status = "Status"
	// Requeue asks the runtime to run the hook again for an object later.
	// The Applier does not apply it.
	Requeue = "Requeue"
)

// Types lists every operation type, in the order the documentation gives them.
var Types = []string{
	Create, CreateIfNotExists, CreateOrUpdate,
	Delete, DeleteInBackground, DeleteNonCascading,
	MergePatch, JSONPatch, JQPatch,
	Apply, ApplySet, Status, Requeue,
}

// Operation is one parsed, validated operation.
type Operation struct {
	// Index is the operation's 0-based position in the file, counting the
	// elements of array documents one by one.
	Index int
	// Type is one of Types.
	Type string
	// APIVersion may be empty: the kind's preferred version is used then.
	// Kind is a kind as hooks write it (any case, plural or short name).
	// For the create types these four come from Object.
	APIVersion, Kind, Namespace, Name string
	// Subresource is the subresource a patch writes to ("status", "scale"),
	// or empty for the object itself.
	Subresource string

	// Object is the object of Create, CreateIfNotExists, CreateOrUpdate
	// and Apply.
	Object *unstructured.Unstructured
	// MergePatch is the JSON object of a MergePatch (RFC 7386).
	MergePatch []byte
	// JSONPatch is the JSON array of a JSONPatch (RFC 6902).
	JSONPatch []byte
	// JQFilter is the program of a JQPatch: it gets the current object and
	// returns the whole new one.
	JQFilter *jq.Filter
	// IgnoreMissingObject makes a patch or Status of an object that does
	// not exist a success (logged) instead of an error.
	IgnoreMissingObject bool

	// Parent is the owner of Apply's object (optional) and of ApplySet's
	// objects (required).
	Parent *ObjectRef
	// Force makes Apply and ApplySet take over fields that other field
	// managers own, instead of failing with a conflict.
	Force bool
	// SetName is ApplySet's name: a parent may have several sets of
	// children, told apart by name.
	SetName string
	// Objects is ApplySet's complete desired set; empty means none, so
	// every object of the set is deleted.
	Objects []*unstructured.Unstructured
	// Owner makes ApplySet give each object a controller reference to the
	// parent. Parse sets it to true when the field is absent.
	Owner bool

	// Status is what Status merges into the object's .status (RFC 7386:
	// a null deletes a key).
	Status map[string]any
	// ObservedGeneration makes Status also set status.observedGeneration to
	// the metadata.generation it read.
	ObservedGeneration bool

	// After is how long a Requeue waits before the hook runs again for the
	// object named by APIVersion, Kind (both optional), Namespace, Name.
	After time.Duration
	// Binding names the kubernetes binding a Requeue runs the hook for;
	// empty leaves the choice to the runtime.
	Binding string
}

// ObjectRef names one object: the parent of Apply and ApplySet.
type ObjectRef struct {
	// APIVersion may be empty (the kind's preferred version); Kind is
	// written as anywhere else (any case, plural or short name).
	APIVersion, Kind, Namespace, Name string
}

// String reads like "apps/v1/Deployment ns/name".
func (r *ObjectRef) String() string {
	s := r.Kind
	if r.APIVersion != "" {
		s = r.APIVersion + "/" + s
	}
	if r.Name != "" {
		s += " " + qualified(r.Namespace, r.Name)
	}
	return strings.TrimSpace(s)
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// String describes the operation for messages: its type and target, e.g.
// "MergePatch v1/ConfigMap ns/name".
func (op *Operation) String() string {
	var b strings.Builder
	b.WriteString(op.Type)
	if op.Type == ApplySet {
		if op.SetName != "" {
			b.WriteString(" " + op.SetName)
		}
		if op.Parent != nil {
			b.WriteString(" of " + op.Parent.String())
		}
		return b.String()
	}
	if op.Kind != "" {
		b.WriteString(" ")
		if op.APIVersion != "" {
			b.WriteString(op.APIVersion + "/")
		}
		b.WriteString(op.Kind)
	}
	name := op.Name
	if name == "" && op.Object != nil && op.Object.GetGenerateName() != "" {
		name = op.Object.GetGenerateName() + "*"
	}
	if name != "" {
		b.WriteString(" ")
		if op.Namespace != "" {
			b.WriteString(op.Namespace + "/")
		}
		b.WriteString(name)
	}
	if op.Subresource != "" {
		b.WriteString(", subresource " + op.Subresource)
	}
	if op.Type == Apply && op.Parent != nil {
		b.WriteString(", parent " + op.Parent.String())
	}
	if op.Type == Requeue {
		if op.After > 0 {
			b.WriteString(" after " + op.After.String())
		}
		if op.Binding != "" {
			b.WriteString(", binding " + op.Binding)
		}
	}
	return strings.TrimSpace(b.String())
}

func isCreate(typ string) bool {
	return typ == Create || typ == CreateIfNotExists || typ == CreateOrUpdate
}

// takesObject tells the types whose target comes from their object.
func takesObject(typ string) bool {
	return isCreate(typ) || typ == Apply
}

func isDelete(typ string) bool {
	return typ == Delete || typ == DeleteInBackground || typ == DeleteNonCascading
}

func isPatch(typ string) bool {
	return typ == MergePatch || typ == JSONPatch || typ == JQPatch
}

// Error is what is wrong with one operation: invalid in the file, not
// applicable to the cluster, or failed to apply.
type Error struct {
	// Index is the operation's position in the file.
	Index int
	// Op describes the operation, as far as it is known (see
	// Operation.String); it is empty when not even its type is.
	Op string
	// Field is the field at fault ("mergePatch", "object.metadata.name"),
	// or empty.
	Field string
	Err   error
}

// Error reads like `operation 2 (MergePatch v1/ConfigMap ns/name): mergePatch: reason`.
func (e *Error) Error() string {
	s := fmt.Sprintf("operation %d", e.Index)
	if e.Op != "" {
		s += " (" + limit.Quote(e.Op) + ")"
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying error, so errors.Is sees API errors and
// kube.ErrUnknownKind through it.
func (e *Error) Unwrap() error { return e.Err }
