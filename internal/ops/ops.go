// Package ops parses the object operations a hook writes to the file at
// $KUBERNETES_PATCH_PATH (Create, Delete, MergePatch ... as shell-operator
// defines them) and applies them to the cluster.
//
// Parsing and applying are separate so that the live runtime, dry-run and
// replay validate a file with the same code and differ only in where the
// operations go.
package ops

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/jq"
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
)

// Types lists every operation type, in the order the documentation gives them.
var Types = []string{
	Create, CreateIfNotExists, CreateOrUpdate,
	Delete, DeleteInBackground, DeleteNonCascading,
	MergePatch, JSONPatch, JQPatch,
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

	// Object is the object of Create, CreateIfNotExists and CreateOrUpdate.
	Object *unstructured.Unstructured
	// MergePatch is the JSON object of a MergePatch (RFC 7386).
	MergePatch []byte
	// JSONPatch is the JSON array of a JSONPatch (RFC 6902).
	JSONPatch []byte
	// JQFilter is the program of a JQPatch: it gets the current object and
	// returns the whole new one.
	JQFilter *jq.Filter
	// IgnoreMissingObject makes a patch of an object that does not exist a
	// success (logged) instead of an error.
	IgnoreMissingObject bool
}

// String describes the operation for messages: its type and target, e.g.
// "MergePatch v1/ConfigMap ns/name".
func (op *Operation) String() string {
	var b strings.Builder
	b.WriteString(op.Type)
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
	return strings.TrimSpace(b.String())
}

func isCreate(typ string) bool {
	return typ == Create || typ == CreateIfNotExists || typ == CreateOrUpdate
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
		s += " (" + e.Op + ")"
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying error, so errors.Is sees API errors and
// kube.ErrUnknownKind through it.
func (e *Error) Unwrap() error { return e.Err }
