package memcluster_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/memcluster"
)

func TestDeleteWithFinalizers(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(configMaps).Namespace("ns")
	cm := configMap("ns", "x", nil)
	cm.SetFinalizers([]string{"a", "b"})
	mustCreate(t, c, configMaps, cm)
	c.TakeChanges()

	if err := r.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, c, configMaps, "ns", "x")
	if nested(got, "metadata", "deletionTimestamp") != "2024-05-06T07:08:09Z" || nested(got, "metadata", "deletionGracePeriodSeconds") != int64(0) {
		t.Errorf("metadata after delete: %v", got.Object["metadata"])
	}
	// A second delete changes nothing.
	if err := r.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	removeFinalizer := func(f string) {
		t.Helper()
		cur, err := r.Get(ctx, "x", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, k := range cur.GetFinalizers() {
			if k != f {
				kept = append(kept, k)
			}
		}
		cur.SetFinalizers(kept)
		// An update cannot take the deletion back.
		cur.SetDeletionTimestamp(nil)
		if _, err := r.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removeFinalizer("a")
	if got := mustGet(t, c, configMaps, "ns", "x"); got.GetDeletionTimestamp() == nil {
		t.Error("an update removed deletionTimestamp")
	}
	removeFinalizer("b")
	if _, held := c.Get(configMaps, "ns", "x"); held {
		t.Error("the object is held after its last finalizer was removed")
	}
	changes := c.TakeChanges()
	if got := describe(changes); got != "Modified configmaps ns/x 2\nModified configmaps ns/x 3\nDeleted configmaps ns/x 4" {
		t.Errorf("changes:\n%s", got)
	}
	if len(changes) == 3 && (len(changes[2].Old.GetFinalizers()) != 1 || len(changes[2].New.GetFinalizers()) != 0) {
		t.Errorf("Deleted: old finalizers %v, new %v", changes[2].Old.GetFinalizers(), changes[2].New.GetFinalizers())
	}
	if err := r.Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a deleted object: %v, want NotFound", err)
	}
}

func TestDeletePreconditions(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(configMaps).Namespace("ns")
	mustCreate(t, c, configMaps, configMap("ns", "x", nil))
	other := types.UID("other")
	if err := r.Delete(ctx, "x", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with another uid: %v, want Conflict", err)
	}
	if err := r.Delete(ctx, "x", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr("1")}}); err != nil {
		t.Errorf("delete with the current resourceVersion: %v", err)
	}
}

// family creates a Deployment owning a ReplicaSet owning two Pods (one
// with a finalizer when podFinalizer), and an unrelated Pod.
func family(t *testing.T, c *memcluster.Cluster, podFinalizer bool) {
	t.Helper()
	owned := func(gvr schema.GroupVersionResource, kind, name string, owner *unstructured.Unstructured) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind}}
		obj.SetNamespace("ns")
		obj.SetName(name)
		if owner != nil {
			obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()}})
		}
		return mustCreate(t, c, gvr, obj)
	}
	d := owned(deployments, "Deployment", "web", nil)
	rs := owned(replicaSets, "ReplicaSet", "web-1", d)
	owned(pods, "Pod", "web-1-a", rs)
	b := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	b.SetNamespace("ns")
	b.SetName("web-1-b")
	b.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: rs.GetUID()}})
	if podFinalizer {
		b.SetFinalizers([]string{"keep"})
	}
	mustCreate(t, c, pods, b)
	owned(pods, "Pod", "other", nil)
	c.TakeChanges()
}

func TestBackgroundCascade(t *testing.T) {
	c := newCluster(memcluster.Options{})
	family(t, c, true)
	if err := c.Resource(deployments).Namespace("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, c, "Deleted deployments ns/web 6\nDeleted replicasets ns/web-1 7\nDeleted pods ns/web-1-a 8\nModified pods ns/web-1-b 9")
	var left []string
	for _, p := range c.List(pods, "ns") {
		left = append(left, p.GetName())
	}
	if len(left) != 2 || left[0] != "other" || left[1] != "web-1-b" {
		t.Errorf("pods left: %v, want other and web-1-b (held by its finalizer)", left)
	}
	if p := mustGet(t, c, pods, "ns", "web-1-b"); p.GetDeletionTimestamp() == nil {
		t.Error("web-1-b is not being deleted")
	}
}

func TestForegroundCascade(t *testing.T) {
	c := newCluster(memcluster.Options{})
	family(t, c, false)
	fg := metav1.DeletePropagationForeground
	if err := c.Resource(deployments).Namespace("ns").Delete(context.Background(), "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, c, "Deleted pods ns/web-1-a 6\nDeleted pods ns/web-1-b 7\nDeleted replicasets ns/web-1 8\nDeleted deployments ns/web 9")
}

func TestOrphan(t *testing.T) {
	c := newCluster(memcluster.Options{})
	family(t, c, false)
	orphan := metav1.DeletePropagationOrphan
	if err := c.Resource(replicaSets).Namespace("ns").Delete(context.Background(), "web-1", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, c, "Modified pods ns/web-1-a 6\nModified pods ns/web-1-b 7\nDeleted replicasets ns/web-1 8")
	for _, p := range c.List(pods, "ns") {
		if len(p.GetOwnerReferences()) != 0 {
			t.Errorf("pod %s still has owner references %v", p.GetName(), p.GetOwnerReferences())
		}
	}
	if _, held := c.Get(deployments, "ns", "web"); !held {
		t.Error("the owner's owner was deleted")
	}
}

func TestDeleteCollection(t *testing.T) {
	c := newCluster(memcluster.Options{})
	mustCreate(t, c, configMaps, configMap("ns", "a", map[string]string{"x": "1"}))
	mustCreate(t, c, configMaps, configMap("ns", "b", map[string]string{"x": "1"}))
	mustCreate(t, c, configMaps, configMap("ns", "c", nil))
	c.TakeChanges()
	err := c.Resource(configMaps).Namespace("ns").DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "x=1"})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, c, "Deleted configmaps ns/a 4\nDeleted configmaps ns/b 5")
}

func deleteOptions() metav1.DeleteOptions {
	return metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}
}
