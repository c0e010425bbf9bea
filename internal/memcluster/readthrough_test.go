package memcluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/memcluster"
)

func TestReadThrough(t *testing.T) {
	ctx := context.Background()
	live := newCluster(memcluster.Options{})
	for _, name := range []string{"a", "b", "c"} {
		mustCreate(t, live, configMaps, configMap("ns", name, map[string]string{"app": "x"}))
	}
	live.TakeChanges()
	dry := newCluster(memcluster.Options{ReadThrough: live})
	r := dry.Resource(configMaps).Namespace("ns")

	// A Get miss reads through and keeps the object as read.
	got, err := r.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := mustGet(t, live, configMaps, "ns", "a")
	if got.GetUID() != want.GetUID() || got.GetResourceVersion() != want.GetResourceVersion() {
		t.Errorf("read through: uid %s rv %s, want %s %s", got.GetUID(), got.GetResourceVersion(), want.GetUID(), want.GetResourceVersion())
	}
	if _, held := dry.Get(configMaps, "ns", "a"); !held {
		t.Error("the object read through is not held")
	}
	if _, err := r.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of an object neither has: %v, want NotFound", err)
	}

	// Writes go to memory only; objects not read yet are read first.
	patched, err := r.Patch(ctx, "b", types.MergePatchType, []byte(`{"data":{"k":"dry"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.Atoi(patched.GetResourceVersion()); rv <= 2 {
		t.Errorf("resourceVersion after the write = %d, want more than the 2 read", rv)
	}
	if nested(mustGet(t, live, configMaps, "ns", "b"), "data", "k") != "v" {
		t.Error("the write reached the live cluster")
	}
	if _, err := r.Create(ctx, configMap("ns", "c", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of a live object: %v, want AlreadyExists", err)
	}
	mustCreate(t, dry, configMaps, configMap("ns", "d", map[string]string{"app": "x"}))

	// Deleted in memory: never read through again.
	if err := r.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of an object deleted in memory: %v, want NotFound", err)
	}
	if _, held := live.Get(configMaps, "ns", "c"); !held {
		t.Error("the delete reached the live cluster")
	}

	list, err := r.List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, o := range list.Items {
		items = append(items, o.GetName()+"="+fmt.Sprint(nested(&o, "data", "k")))
	}
	if fmt.Sprint(items) != "[a=v b=dry d=v]" {
		t.Errorf("list = %v, want live a, b as patched, d created, and no c", items)
	}

	if got := describe(dry.TakeChanges()); got != "Modified configmaps ns/b 3\nAdded configmaps ns/d 4\nDeleted configmaps ns/c 5" {
		t.Errorf("changes:\n%s", got)
	}
	if changes := live.TakeChanges(); len(changes) != 0 {
		t.Errorf("live changes: %s", describe(changes))
	}
}

func TestReadThroughListStoresAsRead(t *testing.T) {
	ctx := context.Background()
	live := newCluster(memcluster.Options{})
	mustCreate(t, live, configMaps, configMap("ns", "a", nil))
	dry := newCluster(memcluster.Options{ReadThrough: live})
	if _, err := dry.Resource(configMaps).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, dry, configMaps, "ns", "a")
	if got.GetResourceVersion() != "1" {
		t.Errorf("listed object has resourceVersion %q, want the live 1", got.GetResourceVersion())
	}
	if changes := dry.TakeChanges(); len(changes) != 0 {
		t.Errorf("reading through recorded changes: %s", describe(changes))
	}
}
