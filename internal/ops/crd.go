package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// crdServeTimeout bounds the wait for a CRD created by the same file to be
// served.
const crdServeTimeout = time.Minute

// definedEarlier finds, among the earlier operations of a file, a
// CustomResourceDefinition being created that defines kind, and returns the
// resource it will serve for apiVersion and kind. A hook may install a CRD
// and create objects of it in one file; discovery cannot know that kind
// before the file is applied.
func definedEarlier(earlier []Operation, apiVersion, kind string) (kube.Resource, bool) {
	for i := len(earlier) - 1; i >= 0; i-- {
		e := earlier[i]
		if !isCreate(e.Type) || e.Object == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(e.Object.GetAPIVersion())
		if err != nil || gv.Group != "apiextensions.k8s.io" || !strings.EqualFold(e.Object.GetKind(), "CustomResourceDefinition") {
			continue
		}
		if res, ok := servedBy(e.Object, apiVersion, kind); ok {
			return res, true
		}
	}
	return kube.Resource{}, false
}

// servedBy returns the resource crd serves for apiVersion (empty: its
// preferred version) and kind (kind, plural, singular or short name).
func servedBy(crd *unstructured.Unstructured, apiVersion, kind string) (kube.Resource, bool) {
	spec := func(path ...string) string {
		s, _, _ := unstructured.NestedString(crd.Object, append([]string{"spec"}, path...)...)
		return s
	}
	group, plural, crdKind := spec("group"), spec("names", "plural"), spec("names", "kind")
	names := []string{crdKind, plural, spec("names", "singular")}
	short, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	names = append(names, short...)
	known := false
	for _, n := range names {
		if n != "" && strings.EqualFold(n, kind) {
			known = true
		}
	}
	if !known || plural == "" || crdKind == "" {
		return kube.Resource{}, false
	}

	var want schema.GroupVersion
	if apiVersion != "" {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || gv.Group != group {
			return kube.Resource{}, false
		}
		want = gv
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	chosen := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		if name == "" || !served {
			continue
		}
		if want.Version != "" {
			if name == want.Version {
				chosen = name
			}
			continue
		}
		if chosen == "" || version.CompareKubeAwareVersionStrings(name, chosen) > 0 {
			chosen = name
		}
	}
	if chosen == "" {
		return kube.Resource{}, false
	}
	return kube.Resource{
		GVR:        schema.GroupVersionResource{Group: group, Version: chosen, Resource: plural},
		GVK:        schema.GroupVersionKind{Group: group, Version: chosen, Kind: crdKind},
		Namespaced: spec("scope") != "Cluster",
	}, true
}

// awaitServed waits until discovery serves the kinds of a step that CRDs
// created by earlier operations define.
func (a *Applier) awaitServed(ctx context.Context, s step) error {
	for _, res := range s.pending {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, crdServeTimeout, true, func(context.Context) (bool, error) {
			_, last = a.Resolver.Resolve(res.APIVersion(), res.GVK.Kind)
			return last == nil, nil
		})
		switch {
		case err == nil:
			continue
		case ctx.Err() != nil:
			return fmt.Errorf("not applied while waiting for the CustomResourceDefinition of %s to be served: %w", res.GVK.Kind, ctx.Err())
		}
		return fmt.Errorf("the CustomResourceDefinition of %s, created by an earlier operation, is not served after %s: %v", res.GVK.Kind, crdServeTimeout, last)
	}
	return nil
}
