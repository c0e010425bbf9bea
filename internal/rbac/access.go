package rbac

import (
	"github.com/hook-operator/hook-operator/internal/ops"
)

// Access is what applying one operation does to one kind: the verbs it
// needs on the kind, or on one of its subresources, in one namespace.
type Access struct {
	// APIVersion may be empty (the kind's preferred version); Kind is
	// written as the hook wrote it (any case, plural or short name).
	APIVersion, Kind string
	// Namespace is empty for a cluster-scoped object.
	Namespace string
	// Subresource is "status", "scale" ... or empty for the object itself.
	Subresource string
	Verbs       []string
}

// The verbs each operation type needs on the kind of its object, as
// docs/bindings.md's table "The verbs each operation needs" lists them
// (TestAccessAsDocumented keeps the two equal). Only what an operation
// always needs is listed: Delete's list and watch only save reads, Apply
// needs create only when the object does not exist yet, and update on a
// parent's finalizers only where the OwnerReferencesPermissionEnforcement
// admission plugin runs.
var (
	createVerbs         = []string{"create"}
	createOrUpdateVerbs = []string{"create", "get", "update"}
	deleteVerbs         = []string{"delete", "get"}
	deleteOnlyVerbs     = []string{"delete"}
	patchVerbs          = []string{"patch"}
	readUpdateVerbs     = []string{"get", "update"}
	applyParentVerbs    = []string{"get"}
	applySetChildVerbs  = []string{"create", "patch", "list", "delete"}
	applySetParentVerbs = []string{"get", "patch"}
)

// AccessOf returns what applying op needs, one Access per object it
// writes or reads: its own, Apply's parent, ApplySet's parent and each of
// its objects. Requeue needs none.
func AccessOf(op ops.Operation) []Access {
	own := func(sub string, verbs []string) []Access {
		return []Access{{APIVersion: op.APIVersion, Kind: op.Kind, Namespace: op.Namespace, Subresource: sub, Verbs: verbs}}
	}
	parent := func(verbs []string) Access {
		p := op.Parent
		return Access{APIVersion: p.APIVersion, Kind: p.Kind, Namespace: p.Namespace, Verbs: verbs}
	}
	switch op.Type {
	case ops.Create, ops.CreateIfNotExists:
		return own("", createVerbs)
	case ops.CreateOrUpdate:
		return own("", createOrUpdateVerbs)
	case ops.Delete:
		return own("", deleteVerbs)
	case ops.DeleteInBackground, ops.DeleteNonCascading:
		return own("", deleteOnlyVerbs)
	case ops.MergePatch, ops.JSONPatch:
		return own(op.Subresource, patchVerbs)
	case ops.JQPatch:
		return own(op.Subresource, readUpdateVerbs)
	case ops.Status:
		return own("status", readUpdateVerbs)
	case ops.Apply:
		out := own("", patchVerbs)
		if op.Parent != nil {
			out = append(out, parent(applyParentVerbs))
		}
		return out
	case ops.ApplySet:
		var out []Access
		if op.Parent != nil {
			out = append(out, parent(applySetParentVerbs))
		}
		for _, o := range op.Objects {
			out = append(out, Access{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Verbs: applySetChildVerbs})
		}
		return out
	}
	return nil
}
