package kube_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/kube"
)

func TestBuiltinResources(t *testing.T) {
	lists := kube.BuiltinResources()
	if len(lists) == 0 {
		t.Fatal("no built-in resources")
	}
	if lists[0].GroupVersion != "v1" {
		t.Errorf("first group version is %q; the core group must rank first", lists[0].GroupVersion)
	}
	find := func(gv, name string) *metav1.APIResource {
		for _, l := range lists {
			if l.GroupVersion != gv {
				continue
			}
			for i := range l.APIResources {
				if l.APIResources[i].Name == name {
					return &l.APIResources[i]
				}
			}
		}
		return nil
	}
	for _, want := range []struct{ gv, name, kind, short string }{
		{"v1", "pods", "Pod", "po"},
		{"apps/v1", "deployments", "Deployment", "deploy"},
	} {
		r := find(want.gv, want.name)
		if r == nil {
			t.Errorf("%s %s is missing", want.gv, want.name)
			continue
		}
		if r.Kind != want.kind || !r.Namespaced || len(r.Verbs) == 0 || !slices.Contains(r.ShortNames, want.short) {
			t.Errorf("%s %s = %+v", want.gv, want.name, *r)
		}
	}
	if find("v1", "pods/status") == nil {
		t.Error("subresource pods/status is missing")
	}

	lists[0].APIResources = nil
	if again := kube.BuiltinResources(); len(again[0].APIResources) == 0 {
		t.Error("BuiltinResources returns shared lists")
	}
}

// Resolved resources say whether they have a status subresource, and which
// are Kubernetes' own.
func TestStatusSubresourceAndBuiltin(t *testing.T) {
	r := kube.NewStaticResolver(kube.BuiltinResources())
	for kind, want := range map[string]bool{"Deployment": true, "Pod": true, "ConfigMap": false, "Secret": false} {
		res, err := r.Resolve("", kind)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != want {
			t.Errorf("%s: Status = %v, want %v", kind, res.Status, want)
		}
		if !kube.Builtin(res.GVR) {
			t.Errorf("%s (%s) is not built in", kind, res.GVR)
		}
	}
	if kube.Builtin(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}) {
		t.Error("a CRD's resource counts as built in")
	}
}
