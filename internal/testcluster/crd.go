package testcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
)

// CRDGVR is the resource of CustomResourceDefinitions.
var CRDGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD describes a test CustomResourceDefinition. Its group is made unique per
// call, so tests never share one.
type CRD struct {
	Kind       string // e.g. "Widget"; plural is lowercase kind + "s"
	ShortNames []string
	Cluster    bool           // cluster-scoped instead of namespaced
	Schema     map[string]any // openAPIV3Schema; default: any fields preserved
	Status     bool           // enable the status subresource
}

// Unique returns a unique API group for a test CRD.
func Unique() string { return "t" + rand.String(8) + ".test.hook-operator.dev" }

// Object returns the CRD manifest for group.
func (d CRD) Object(group string) *unstructured.Unstructured {
	plural := strings.ToLower(d.Kind) + "s"
	schemaV3 := d.Schema
	if schemaV3 == nil {
		schemaV3 = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	version := map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": schemaV3},
	}
	if d.Status {
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	names := map[string]any{"plural": plural, "singular": strings.ToLower(d.Kind), "kind": d.Kind}
	if len(d.ShortNames) > 0 {
		sn := make([]any, len(d.ShortNames))
		for i, s := range d.ShortNames {
			sn[i] = s
		}
		names["shortNames"] = sn
	}
	scope := "Namespaced"
	if d.Cluster {
		scope = "Cluster"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope, "names": names,
			"versions": []any{version},
		},
	}}
}

// InstallCRD creates d under a unique group, waits until it is established
// and served, deletes it when t ends, and returns the resource of its
// objects.
func (c *Cluster) InstallCRD(t testing.TB, d CRD) schema.GroupVersionResource {
	t.Helper()
	group := Unique()
	obj := d.Object(group)
	ctx := context.Background()
	if _, err := c.Dynamic.Resource(CRDGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testcluster: create CRD %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(CRDGVR).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: strings.ToLower(d.Kind) + "s"}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.Dynamic.Resource(CRDGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			if m, _ := cond.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				// Established can precede serving on every path by a moment.
				_, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
				return err == nil, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("testcluster: CRD %s never became established and served: %v", obj.GetName(), err)
	}
	return gvr
}
