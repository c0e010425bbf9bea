package ops

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func TestIntegrationCreate(t *testing.T) {
	e := newEnv(t)
	file := `
operation: Create
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: %NS%, labels: {app: web}}
  data: {replicas: "3"}
`
	e.mustApply(file)
	got := e.mustGet(configMaps, "a")
	if nested(got, "data", "replicas") != "3" || got.GetLabels()["app"] != "web" {
		t.Errorf("created %v", got.Object)
	}

	err := e.apply(file)
	wantErr(t, err, fmt.Sprintf("operation 0 (Create v1/ConfigMap %s/a): ", e.ns), "already exists")
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("not an AlreadyExists error: %v", err)
	}
}

func TestIntegrationCreateObjectFromASnapshot(t *testing.T) {
	e := newEnv(t)
	// An object as a binding context carries it, with the fields the server
	// set; it was since deleted, and is created again from the copy.
	old := e.configMap("a", map[string]any{"k": "v"})
	if err := e.c.Dynamic.Resource(configMaps).Namespace(e.ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	js, err := old.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	e.mustApply(fmt.Sprintf(`{"operation": "Create", "object": %s}`, js))
	got := e.mustGet(configMaps, "a")
	if got.GetUID() == old.GetUID() || nested(got, "data", "k") != "v" {
		t.Errorf("got uid %s (old %s), data %v", got.GetUID(), old.GetUID(), nested(got, "data"))
	}
}

func TestIntegrationCreateGenerateName(t *testing.T) {
	e := newEnv(t)
	file := `{operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {generateName: run-, namespace: %NS%}}}`
	e.mustApply(file)
	e.mustApply(file)
	list, err := e.c.Dynamic.Resource(configMaps).Namespace(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cm := range list.Items {
		if cm.GetGenerateName() == "run-" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d generated ConfigMaps, want 2", n)
	}
}

func TestIntegrationCreateIfNotExists(t *testing.T) {
	e := newEnv(t)
	file := `
operation: CreateIfNotExists
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: %NS%}
  data: {k: from-hook}
`
	e.mustApply(file)
	if got := e.mustGet(configMaps, "a"); nested(got, "data", "k") != "from-hook" {
		t.Fatalf("created %v", got.Object)
	}
	e.mustApply(`{operation: MergePatch, kind: ConfigMap, namespace: %NS%, name: a, mergePatch: {data: {k: changed}}}`)
	e.mustApply(file)
	if got := e.mustGet(configMaps, "a"); nested(got, "data", "k") != "changed" {
		t.Errorf("CreateIfNotExists changed the existing object: %v", got.Object)
	}
}

// TestIntegrationCreateOrUpdate runs on a CRD with a status subresource,
// where the API server itself ignores .status on update, and on one
// without, where only the Applier keeps it.
//
// With a watch cache that knows the object's resourceVersion (cached), a
// kind with a status subresource is updated with it, in one request; one
// without is read first all the same.
func TestIntegrationCreateOrUpdate(t *testing.T) {
	for _, tc := range []struct{ withStatus, cached bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		withStatus := tc.withStatus
		t.Run(fmt.Sprintf("status subresource %v, cached %v", withStatus, tc.cached), func(t *testing.T) {
			e := newEnv(t)
			gvr := e.crd(testcluster.CRD{Kind: "Widget", Status: withStatus})
			if tc.cached {
				e.a.Cached = func(_ kube.Resource, ns, name string) (string, bool) {
					live := e.get(gvr, name)
					if live == nil {
						return "", false
					}
					return live.GetResourceVersion(), true
				}
			}
			file := func(size int, extra string) string {
				return fmt.Sprintf(`
operation: CreateOrUpdate
object:
  apiVersion: %s
  kind: Widget
  metadata:
    name: w
    namespace: %%NS%%
    labels: {size: "%d"}%s
  spec: {size: %d}
  status: {phase: FromHook}
`, gvr.GroupVersion(), size, extra, size)
			}
			e.mustApply(file(1, ""))
			created := e.mustGet(gvr, "w")
			if nested(created, "spec", "size") != int64(1) {
				t.Fatalf("created %v", created.Object)
			}

			// Someone reports status.
			live := created.DeepCopy()
			live.Object["status"] = map[string]any{"phase": "Ready"}
			client := e.c.Dynamic.Resource(gvr).Namespace(e.ns)
			var err error
			if withStatus {
				live, err = client.UpdateStatus(context.Background(), live, metav1.UpdateOptions{})
			} else {
				live, err = client.Update(context.Background(), live, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}

			// The hook writes an object from an old snapshot: its
			// resourceVersion is stale.
			stale := fmt.Sprintf("\n    resourceVersion: %q\n    uid: %s", created.GetResourceVersion(), created.GetUID())
			e.mustApply(file(2, stale))
			got := e.mustGet(gvr, "w")
			if nested(got, "spec", "size") != int64(2) || got.GetLabels()["size"] != "2" {
				t.Errorf("not updated: %v", got.Object)
			}
			if phase := nested(got, "status", "phase"); phase != "Ready" {
				t.Errorf("status.phase = %v, want Ready (CreateOrUpdate must not write status)", phase)
			}
			if got.GetResourceVersion() == live.GetResourceVersion() {
				t.Error("resourceVersion did not change")
			}
		})
	}
}

func TestIntegrationCreateOrUpdateConcurrently(t *testing.T) {
	e := newEnv(t)
	e.configMap("a", nil)
	e.concurrently(8, func(i int) error {
		ops, err := Parse([]byte(fmt.Sprintf(`{operation: CreateOrUpdate, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %s}, data: {writer: "%d"}}}`, e.ns, i)))
		if err != nil {
			return err
		}
		return e.a.Apply(context.Background(), ops)
	})
}

// With a watch cache that says the object exists, CreateOrUpdate updates
// it without trying to create it; a cache that is behind (the object is
// gone, or not there yet) does not keep it from being created.
func TestIntegrationCreateOrUpdateTrustsTheCacheOnlyAsAGuess(t *testing.T) {
	e := newEnv(t)
	e.configMap("there", map[string]any{"v": "old"})
	// A resourceVersion from long ago: the update conflicts, and is made
	// again after reading the object.
	e.a.Cached = func(kube.Resource, string, string) (string, bool) { return "1", true }
	e.mustApply(`{operation: CreateOrUpdate, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: there, namespace: %NS%}, data: {v: "new"}}}
---
{operation: CreateOrUpdate, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: missing, namespace: %NS%}, data: {v: "new"}}}`)
	for _, name := range []string{"there", "missing"} {
		if got := e.mustGet(configMaps, name); nested(got, "data", "v") != "new" {
			t.Errorf("%s after CreateOrUpdate: %v", name, got.Object)
		}
	}
}

// A hook may install a CRD and create an object of it in one file.
func TestIntegrationCreateCRDAndItsObject(t *testing.T) {
	e := newEnv(t)
	group := testcluster.Unique()
	crd := testcluster.CRD{Kind: "Gadget", ShortNames: []string{"gdt"}}.Object(group)
	t.Cleanup(func() {
		_ = e.c.Dynamic.Resource(testcluster.CRDGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	})
	js, err := crd.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The new kind's namespace is checked before anything is applied.
	err = e.apply(fmt.Sprintf(`{"operation": "CreateOrUpdate", "object": %s}
{"operation": "Create", "object": {"apiVersion": "%s/v1", "kind": "Gadget", "metadata": {"name": "h"}}}
`, js, group))
	wantErr(t, err, "operation 1 (Create "+group+"/v1/Gadget h): object.metadata.namespace: required: Gadget is namespaced")
	if _, err := e.c.Dynamic.Resource(testcluster.CRDGVR).Get(context.Background(), crd.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the CRD was created though the file was refused: %v", err)
	}

	e.mustApply(fmt.Sprintf(`{"operation": "CreateOrUpdate", "object": %s}
{"operation": "Create", "object": {"kind": "gdt", "metadata": {"name": "g", "namespace": "%%NS%%"}, "spec": {"a": 1}}}
`, js))
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	if got := e.mustGet(gvr, "g"); nested(got, "spec", "a") != int64(1) {
		t.Errorf("created %v", got.Object)
	}
}
