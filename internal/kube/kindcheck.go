package kube

import (
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

// KindProblem is what BuiltinKinds.Check found wrong with a binding's
// apiVersion and kind: the field at fault ("kind" or "apiVersion") and
// why, saying what to change.
type KindProblem struct {
	Field  string
	Reason string
}

// BuiltinKinds is Kubernetes' own kinds (BuiltinResources) indexed as a
// resolver would index them, for Check. Building it allocates about
// 200 KB and takes a millisecond; held, it and the decoded lists it comes
// from are about 75 KB of live heap. It is needed only while hooks load:
// it is built on first use and kept while someone holds it (weakly, see
// weakly), so that an operator does not keep it for its life. A load
// holds one for all its hooks.
type BuiltinKinds struct {
	k     *kinds
	names []string
}

// NewBuiltinKinds returns the index, built again only if the last one is
// gone.
func NewBuiltinKinds() *BuiltinKinds { return builtinKinds() }

var builtinKinds = weakly(func() *BuiltinKinds {
	k := newKinds(rankStatic(*builtin()), nil)
	seen := map[string]bool{}
	var names []string
	for _, r := range k.resources {
		if !seen[r.GVK.Kind] {
			seen[r.GVK.Kind] = true
			names = append(names, r.GVK.Kind)
		}
	}
	sort.Strings(names)
	return &BuiltinKinds{k: k, names: names}
})

// Check judges a binding's apiVersion and kind offline, against
// Kubernetes' own kinds (BuiltinResources), and returns nil when nothing
// is wrong. A kind that is not built-in but is a near miss of one
// ("Namespce") is almost certainly a typo: live, it would wait for a CRD
// that never comes. A built-in kind with the apiVersion of another
// built-in group ("apps/v1" ConfigMap) is wrong too. Anything else may be
// a custom resource, installed or not yet, and is left to the cluster: a
// kind with the apiVersion of a group that is not built-in, whatever its
// name, and a kind far from every built-in one.
func (b *BuiltinKinds) Check(apiVersion, kind string) *KindProblem {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" {
		return nil // the configuration's parser reports those
	}
	k, names := b.k, b.names
	if apiVersion != "" && !k.hasGroup(gv.Group) {
		return nil
	}
	anyGroup, err := k.lookup(schema.GroupVersion{}, true, kind)
	if err == nil || !errors.Is(err, ErrUnknownKind) {
		if apiVersion == "" {
			return nil
		}
		if _, err := k.lookup(schema.GroupVersion{Group: gv.Group}, false, kind); err == nil || !errors.Is(err, ErrUnknownKind) {
			return nil
		}
		return &KindProblem{Field: "apiVersion", Reason: fmt.Sprintf("%s is a kind of apiVersion %s, not of %s; set apiVersion: %s (or leave apiVersion out)",
			kind, anyGroup.APIVersion(), apiVersion, anyGroup.APIVersion())}
	}
	if near := spelling.Nearest(kind, names); near != "" {
		return &KindProblem{Field: "kind", Reason: fmt.Sprintf("%q is not a kind of Kubernetes; did you mean %s? If it is a custom resource's kind, set apiVersion to its group/version, and the cluster will be asked for it",
			kind, near)}
	}
	return nil
}

// hasGroup reports whether one of k's resources is in group.
func (k *kinds) hasGroup(group string) bool {
	for _, r := range k.resources {
		if r.GVR.Group == group {
			return true
		}
	}
	return false
}
