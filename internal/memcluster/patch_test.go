package memcluster_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/memcluster"
)

func TestMergeAndJSONPatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(deployments).Namespace("ns")
	mustCreate(t, c, deployments, parse(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns},
		spec: {replicas: 1, paused: true, template: {metadata: {labels: {a: b}}}}}`))

	got, err := r.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"replicas":3,"paused":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Object["spec"]) != "map[replicas:3 template:map[metadata:map[labels:map[a:b]]]]" || got.GetGeneration() != 2 {
		t.Errorf("after merge patch: spec %v, generation %d", got.Object["spec"], got.GetGeneration())
	}

	got, err = r.Patch(ctx, "d", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/replicas","value":3},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetLabels()["x"] != "y" || got.GetGeneration() != 2 {
		t.Errorf("after JSON patch: labels %v, generation %d", got.GetLabels(), got.GetGeneration())
	}

	for _, tc := range []struct {
		what string
		pt   types.PatchType
		data string
		is   func(error) bool
	}{
		{"failed JSON patch test", types.JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":7}]`, apierrors.IsInvalid},
		{"JSON patch not an array", types.JSONPatchType, `{"op":"add"}`, apierrors.IsBadRequest},
		{"merge patch not JSON", types.MergePatchType, `{`, apierrors.IsBadRequest},
		{"strategic merge patch", types.StrategicMergePatchType, `{}`, apierrors.IsBadRequest},
		{"stale resourceVersion", types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"spec":{"replicas":4}}`, apierrors.IsConflict},
		{"rename", types.MergePatchType, `{"metadata":{"name":"e"}}`, apierrors.IsBadRequest},
	} {
		if _, err := r.Patch(ctx, "d", tc.pt, []byte(tc.data), metav1.PatchOptions{}); !tc.is(err) {
			t.Errorf("%s: error %v", tc.what, err)
		}
	}
	if _, err := r.Patch(ctx, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patch of a missing object: %v, want NotFound", err)
	}
	// The current resourceVersion makes the patch conditional, and it holds.
	cur := mustGet(t, c, deployments, "ns", "d")
	patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"replicas":4}}`, cur.GetResourceVersion())
	if _, err := r.Patch(ctx, "d", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Errorf("patch with the current resourceVersion: %v", err)
	}
}

func TestApplyPatch(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(deployments).Namespace("ns")
	apply := func(body string, sub ...string) error {
		_, err := r.Patch(ctx, "d", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "test", Force: ptr(true)}, sub...)
		return err
	}

	// YAML creates the object.
	if err := apply("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers: [{name: a, image: a:1}, {name: b, image: b:1}]\n"); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, c, deployments, "ns", "d")
	if got.GetNamespace() != "ns" || got.GetGeneration() != 1 || nested(got, "spec", "replicas") != int64(1) {
		t.Errorf("created by apply: %v", got.Object)
	}

	// JSON merges: maps key by key, lists replaced, nulls ignored.
	if err := apply(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"l":"1"}},"spec":{"paused":null,"template":{"spec":{"containers":[{"name":"c","image":"c:1"}]}}}}`); err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, c, deployments, "ns", "d")
	if fmt.Sprint(got.Object["spec"]) != "map[replicas:1 template:map[spec:map[containers:[map[image:c:1 name:c]]]]]" || got.GetLabels()["l"] != "1" || got.GetGeneration() != 2 {
		t.Errorf("after apply: spec %v, labels %v, generation %d", got.Object["spec"], got.GetLabels(), got.GetGeneration())
	}

	// The status subresource takes only the status.
	if err := apply(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":5},"status":{"ready":1}}`, "status"); err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, c, deployments, "ns", "d")
	if nested(got, "spec", "replicas") != int64(1) || nested(got, "status", "ready") != int64(1) {
		t.Errorf("after status apply: spec %v, status %v", got.Object["spec"], got.Object["status"])
	}

	// Apply through the interface's own method is the same.
	cfg := parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 2}}")
	if _, err := r.Apply(ctx, "d", cfg, metav1.ApplyOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, c, deployments, "ns", "d"); nested(got, "spec", "replicas") != int64(2) {
		t.Errorf("after Apply: spec %v", got.Object["spec"])
	}

	if _, err := r.Patch(ctx, "d", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment"}`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("apply without field manager: %v, want BadRequest", err)
	}
	if err := apply(`{"metadata":{"name":"d"}}`); !apierrors.IsBadRequest(err) {
		t.Errorf("apply without apiVersion and kind: %v, want BadRequest", err)
	}
	if err := apply(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"other"}}`); !apierrors.IsBadRequest(err) {
		t.Errorf("apply of another name: %v, want BadRequest", err)
	}
	_, err := c.Resource(deployments).Namespace("ns").Patch(ctx, "missing", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","status":{}}`), metav1.PatchOptions{FieldManager: "test"}, "status")
	if !apierrors.IsNotFound(err) {
		t.Errorf("status apply of a missing object: %v, want NotFound", err)
	}
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(deployments).Namespace("ns")
	mustCreate(t, c, deployments, parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {replicas: 1}, status: {replicas: 1}}"))

	scale, err := r.Get(ctx, "d", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if scale.GetKind() != "Scale" || scale.GetAPIVersion() != "autoscaling/v1" || nested(scale, "spec", "replicas") != int64(1) || nested(scale, "status", "replicas") != int64(1) {
		t.Errorf("scale = %v", scale.Object)
	}
	scale.Object["spec"] = map[string]any{"replicas": int64(3)}
	if _, err := r.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	// scale still has the old resourceVersion.
	if _, err := r.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); !apierrors.IsConflict(err) {
		t.Errorf("scale update with a stale resourceVersion: %v, want Conflict", err)
	}
	scale, err = r.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, c, deployments, "ns", "d")
	if nested(got, "spec", "replicas") != int64(4) || nested(scale, "spec", "replicas") != int64(4) || got.GetGeneration() != 3 {
		t.Errorf("after scaling: spec %v, generation %d, scale %v", got.Object["spec"], got.GetGeneration(), scale.Object)
	}
}
