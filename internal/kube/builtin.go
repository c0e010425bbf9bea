package kube

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinJSON is the discovery data of a Kubernetes v1.36 API server with
// its default API groups enabled; hack/gen-builtin-resources.sh writes it.
//
//go:embed builtin_resources.json
var builtinJSON []byte

// builtin decodes builtinJSON on first use (not at start-up: the live
// runtime never needs it); BuiltinResources hands out copies.
var builtin = sync.OnceValue(func() []*metav1.APIResourceList {
	var lists []*metav1.APIResourceList
	if err := json.Unmarshal(builtinJSON, &lists); err != nil {
		// The file is generated and embedded at build time: a failure is a
		// build defect, which the package's tests catch.
		panic(fmt.Sprintf("kube: builtin_resources.json: %v", err))
	}
	return lists
})

// BuiltinResources returns the API resources Kubernetes v1.36 serves out of
// the box (the core group, apps, batch, the *.k8s.io groups, ...; no CRDs),
// as discovery lists them: core v1 first, then the groups in the API
// server's order, which decides what an ambiguous name such as "events"
// resolves to. The lists are a fresh copy the caller may modify.
func BuiltinResources() []*metav1.APIResourceList {
	return copyLists(builtin())
}

// builtinSet holds the resources of BuiltinResources, by GVR string.
var builtinSet = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, l := range builtin() {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			set[gv.WithResource(r.Name).String()] = true
		}
	}
	return set
})

// Builtin reports whether gvr is one of Kubernetes' own resources (see
// BuiltinResources), not one a CRD or an aggregated API server defines.
// Kubernetes' own kinds that have a status field have a status
// subresource; those without one have no status field at all.
func Builtin(gvr schema.GroupVersionResource) bool { return builtinSet()[gvr.String()] }
