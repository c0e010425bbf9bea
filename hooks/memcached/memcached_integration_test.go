package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

const (
	crdFile  = "memcacheds.cache.example.com.yaml"
	hookName = "memcached/memcached"
	// maxRuns bounds the runs of the whole scenario below. It settles in
	// far fewer (about 20); a hook that triggers itself does not.
	maxRuns = 100
)

var memcachedsGVR = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1", Resource: "memcacheds"}

// TestIntegrationMemcached runs the Memcached operator with the real
// binary on the local cluster, where kwok marks the Pods Running: it
// follows the size, repairs manual changes to its Deployment, reports the
// Running Pods, settles without a hot loop, and leaves the Deployment to the
// garbage collector when the Memcached goes.
func TestIntegrationMemcached(t *testing.T) {
	c := testcluster.Get(t)
	testoperator.InstallCRDs(t, c, crdFile)
	ns := c.Namespace(t)
	op := testoperator.Start(t, c, testoperator.Hooks(t, "memcached"))
	mc := c.Dynamic.Resource(memcachedsGVR).Namespace(ns)
	deployments := c.Client.AppsV1().Deployments(ns)
	bg := context.Background()

	created, err := mc.Create(bg, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": "sample"},
		"spec":     map[string]any{"size": int64(3)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitConverged(t, c, ns, "sample", 3)

	d, err := deployments.Get(bg, "sample", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.GetControllerOf(d)
	if owner == nil || owner.Kind != "Memcached" || owner.Name != "sample" || owner.UID != created.GetUID() {
		t.Errorf("the Deployment's controller is %+v, want the Memcached sample (uid %s)", owner, created.GetUID())
	}

	for _, size := range []int64{5, 1} {
		setSize(t, c, ns, "sample", size)
		waitConverged(t, c, ns, "sample", size)
	}

	// A manual scale of the Deployment is undone.
	if _, err := deployments.UpdateScale(bg, "sample", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "sample", Namespace: ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 4},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, c, ns, "sample", 1)

	// A deleted Deployment comes back.
	if err := deployments.Delete(bg, "sample", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testoperator.Eventually(t, 60*time.Second, "the Deployment to be recreated", func(ctx context.Context) (bool, error) {
		got, err := deployments.Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.UID != d.UID, fmt.Errorf("still the old Deployment %s", got.UID)
	})
	waitConverged(t, c, ns, "sample", 1)

	// Settled: nothing changes, so nothing runs. The operator's own writes
	// (Apply of an unchanged Deployment, Status of an unchanged status)
	// must not run the hook again and again.
	op.WaitQuiet(t, 3*time.Second, 60*time.Second)
	runs := op.Runs(hookName)
	time.Sleep(5 * time.Second)
	if after := op.Runs(hookName); after != runs {
		t.Errorf("the hook ran %d more times while nothing changed (a hot loop?)", after-runs)
	}
	if runs > maxRuns {
		t.Errorf("the hook ran %d times for this scenario, more than the %d it should ever need", runs, maxRuns)
	}
	if f := op.Failures(hookName); f != 0 {
		t.Errorf("%d runs failed", f)
	}
	t.Logf("%d runs so far", runs)

	// Size 0 is allowed: no servers, no nodes.
	setSize(t, c, ns, "sample", 0)
	waitConverged(t, c, ns, "sample", 0)

	// Deleting the Memcached deletes its Deployment (garbage collection).
	if err := mc.Delete(bg, "sample", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testoperator.Eventually(t, 60*time.Second, "the Deployment to be garbage-collected", func(ctx context.Context) (bool, error) {
		_, err := deployments.Get(ctx, "sample", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("the Deployment still exists (err %v)", err)
	})
	t.Logf("%d runs, %d failures in all", op.Runs(hookName), op.Failures(hookName))
}

// TestIntegrationMemcachedRejectsNegativeSize checks the CRD's schema: a
// negative size never reaches the hook.
func TestIntegrationMemcachedRejectsNegativeSize(t *testing.T) {
	c := testcluster.Get(t)
	testoperator.InstallCRDs(t, c, crdFile)
	ns := c.Namespace(t)
	_, err := c.Dynamic.Resource(memcachedsGVR).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": "negative"},
		"spec":     map[string]any{"size": int64(-1)},
	}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("creating a Memcached of size -1: got error %v, want it refused as invalid", err)
	}
	t.Logf("refused as expected: %v", err)
}

func setSize(t *testing.T, c *testcluster.Cluster, ns, name string, size int64) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)
	if _, err := c.Dynamic.Resource(memcachedsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("set size %d: %v", size, err)
	}
}

// waitConverged waits until the Memcached name has the Deployment and the
// status of size: spec.replicas = size, size Pods Running, status.nodes
// listing exactly them, and status.observedGeneration = metadata.generation.
func waitConverged(t *testing.T, c *testcluster.Cluster, ns, name string, size int64) {
	t.Helper()
	testoperator.Eventually(t, 90*time.Second, fmt.Sprintf("Memcached %s to converge at size %d", name, size), func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Spec.Replicas == nil || int64(*d.Spec.Replicas) != size {
			return false, fmt.Errorf("Deployment replicas %v, want %d", d.Spec.Replicas, size)
		}
		running, err := runningPodNames(ctx, c, ns, name)
		if err != nil {
			return false, err
		}
		if int64(len(running)) != size {
			return false, fmt.Errorf("%d Pods Running (%v), want %d", len(running), running, size)
		}
		m, err := c.Dynamic.Resource(memcachedsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nodes, _, _ := unstructured.NestedStringSlice(m.Object, "status", "nodes")
		if !slices.Equal(nodes, running) {
			return false, fmt.Errorf("status.nodes %v, want the Running Pods %v", nodes, running)
		}
		observed, _, _ := unstructured.NestedInt64(m.Object, "status", "observedGeneration")
		if observed != m.GetGeneration() {
			return false, fmt.Errorf("status.observedGeneration %d, want metadata.generation %d", observed, m.GetGeneration())
		}
		return true, nil
	})
}

// runningPodNames lists the sorted names of the instance's Pods that are
// Running and not being deleted.
func runningPodNames(ctx context.Context, c *testcluster.Cluster, ns, instance string) ([]string, error) {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: nameLabel + "=memcached," + instanceLabel + "=" + instance,
	})
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
