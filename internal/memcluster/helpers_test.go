package memcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/memcluster"
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	replicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// clock is the virtual time of the tests.
var clock = time.Date(2024, 5, 6, 7, 8, 9, 500_000_000, time.UTC)

func newCluster(opts memcluster.Options) *memcluster.Cluster {
	if opts.Now == nil {
		opts.Now = func() time.Time { return clock }
	}
	return memcluster.New(opts)
}

// parse reads an object written in YAML, keeping integers int64.
func parse(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return obj
}

func configMap(namespace, name string, labels map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"data":       map[string]any{"k": "v"},
	}}
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.SetLabels(labels)
	return obj
}

func mustCreate(t *testing.T, c *memcluster.Cluster, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := c.Resource(gvr).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	return out
}

func mustGet(t *testing.T, c *memcluster.Cluster, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, ok := c.Get(gvr, namespace, name)
	if !ok {
		t.Fatalf("%s %s/%s is not held", gvr.Resource, namespace, name)
	}
	return obj
}

func nested(obj *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	return v
}

// describe summarizes changes as "Type resource ns/name rv", one per line.
func describe(changes []memcluster.Change) string {
	var lines []string
	for _, ch := range changes {
		lines = append(lines, fmt.Sprintf("%s %s %s/%s %s", ch.Type, ch.Resource.Resource, ch.New.GetNamespace(), ch.New.GetName(), ch.New.GetResourceVersion()))
	}
	return strings.Join(lines, "\n")
}

// wantChanges takes the changes c recorded since the last take and
// wants them to read want (as describe writes them).
func wantChanges(t *testing.T, c *memcluster.Cluster, want string) {
	t.Helper()
	if got := describe(c.TakeChanges()); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}

func ptr[T any](v T) *T { return &v }
