package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// poll calls cond every 200ms until it returns true, an error, or timeout ends.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// The scheduler, the controller manager and kwok's fake kubelet all work: a
// Deployment's ReplicaSet creates Pods, they are bound to the fake Node and
// reported Running.
func TestIntegrationDeploymentPodsRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	_, err := c.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	var running []string
	poll(t, 60*time.Second, "2 Running pods", func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		running = running[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.Status.PodIP != "" {
				running = append(running, p.Name)
			}
		}
		return len(running) == 2, nil
	})
	poll(t, 30*time.Second, "deployment available", func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == 2, nil
	})
}

// A CRD is served once established, and custom resources of it can be
// created, listed and deleted; its schema is enforced.
func TestIntegrationCustomResource(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	gvr := c.InstallCRD(t, testcluster.CRD{Kind: "Widget", Schema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"spec": map[string]any{"type": "object", "properties": map[string]any{
				"size": map[string]any{"type": "integer", "minimum": int64(1)},
			}},
		},
	}})
	group := gvr.Group

	widgets := c.Dynamic.Resource(gvr).Namespace(ns)
	for i := range 3 {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1",
			"kind":       "Widget",
			"metadata":   map[string]any{"name": fmt.Sprintf("w%d", i)},
			"spec":       map[string]any{"size": int64(i + 1)},
		}}
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", w.GetName(), err)
		}
	}
	// The CRD's schema is enforced.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "bad"}, "spec": map[string]any{"size": int64(0)},
	}}
	if _, err := widgets.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("create widget with size 0: want an Invalid error from the schema, got %v", err)
	}
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list widgets: %v", err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("list widgets: got %d items, want 3", len(list.Items))
	}
	if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete widget: %v", err)
	}
	if _, err := widgets.Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get deleted widget: want NotFound, got %v", err)
	}
	list, err = widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list widgets after delete: %d items, err %v; want 2", len(list.Items), err)
	}
}

// The namespace controller finishes a namespace's deletion, contents included.
func TestIntegrationNamespaceDeletion(t *testing.T) {
	c := testcluster.Get(t)
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-delete-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	poll(t, 60*time.Second, "namespace gone", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
