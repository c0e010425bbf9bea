package kube

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
	"weak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinJSON is the discovery data of a Kubernetes v1.37 API server with
// its default API groups enabled; hack/gen-builtin-resources.sh writes it.
//
//go:embed builtin_resources.json
var builtinJSON []byte

// builtin decodes builtinJSON on first use (not at start-up), and again
// only once the last decoded lists are gone (weakly): the live runtime
// needs them only while hooks load (BuiltinKinds) and for builtinSet.
// BuiltinResources hands out copies.
var builtin = weakly(func() *[]*metav1.APIResourceList {
	var lists []*metav1.APIResourceList
	if err := json.Unmarshal(builtinJSON, &lists); err != nil {
		// The file is generated and embedded at build time: a failure is a
		// build defect, which the package's tests catch.
		panic(fmt.Sprintf("kube: builtin_resources.json: %v", err))
	}
	return &lists
})

// weakly returns a function that returns build's value, built on the first
// call and again only after the garbage collector has taken the last one:
// the value lives while a caller holds it, not for the process's life.
func weakly[T any](build func() *T) func() *T {
	var (
		mu sync.Mutex
		w  weak.Pointer[T]
	)
	return func() *T {
		mu.Lock()
		defer mu.Unlock()
		if v := w.Value(); v != nil {
			return v
		}
		v := build()
		w = weak.Make(v)
		return v
	}
}

// BuiltinResources returns the API resources Kubernetes v1.37 serves out of
// the box (the core group, apps, batch, the *.k8s.io groups, ...; no CRDs),
// as discovery lists them: core v1 first, then the groups in the API
// server's order, which decides what an ambiguous name such as "events"
// resolves to. The lists are a fresh copy the caller may modify.
func BuiltinResources() []*metav1.APIResourceList {
	return copyLists(*builtin())
}

// builtinSet holds the resources of BuiltinResources, by GVR string.
var builtinSet = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, l := range *builtin() {
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
