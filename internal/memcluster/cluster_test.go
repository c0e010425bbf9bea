package memcluster_test

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/memcluster"
)

func TestCreateGetList(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	in := configMap("", "x", map[string]string{"app": "web"})
	created, err := c.Resource(configMaps).Namespace("a").Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The caller's object is its own, before and after.
	in.SetName("changed")
	created.SetLabels(nil)

	got := mustGet(t, c, configMaps, "a", "x")
	if got.GetNamespace() != "a" {
		t.Errorf("namespace = %q, want it taken from the call", got.GetNamespace())
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(string(got.GetUID())) || got.GetUID() != "00000000-0000-4000-8000-000000000001" {
		t.Errorf("uid = %q, want the first UUID of the counter", got.GetUID())
	}
	// ConfigMaps have no spec, and so no generation.
	if got.GetResourceVersion() != "1" || got.GetGeneration() != 0 {
		t.Errorf("resourceVersion %q, generation %d; want 1, none", got.GetResourceVersion(), got.GetGeneration())
	}
	if ts := nested(got, "metadata", "creationTimestamp"); ts != "2024-05-06T07:08:09Z" {
		t.Errorf("creationTimestamp = %v", ts)
	}
	if got.GetLabels()["app"] != "web" {
		t.Errorf("labels = %v: changing the returned object changed the held one", got.GetLabels())
	}

	mustCreate(t, c, configMaps, configMap("b", "z", map[string]string{"app": "db"}))
	mustCreate(t, c, configMaps, configMap("a", "w", nil))
	mustCreate(t, c, deployments, parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: x, namespace: a}}"))

	names := func(items []unstructured.Unstructured) string {
		var s []string
		for _, o := range items {
			s = append(s, o.GetNamespace()+"/"+o.GetName())
		}
		return fmt.Sprint(s)
	}
	for _, tc := range []struct {
		namespace, labels, fields, want string
	}{
		{"", "", "", "[a/w a/x b/z]"},
		{"a", "", "", "[a/w a/x]"},
		{"", "app", "", "[a/x b/z]"},
		{"", "app in (db)", "", "[b/z]"},
		{"", "", "metadata.name=x", "[a/x]"},
		{"", "", "metadata.namespace!=a", "[b/z]"},
	} {
		r := c.Resource(configMaps)
		list, err := r.Namespace(tc.namespace).List(ctx, metav1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(list.Items); got != tc.want {
			t.Errorf("list %q %q %q = %s, want %s", tc.namespace, tc.labels, tc.fields, got, tc.want)
		}
		if list.GetKind() != "ConfigMapList" && tc.want != "[]" {
			t.Errorf("list kind = %q", list.GetKind())
		}
		if list.GetResourceVersion() != "4" {
			t.Errorf("list resourceVersion = %q, want 4", list.GetResourceVersion())
		}
	}
	if got := c.List(configMaps, "a"); len(got) != 2 || got[0].GetName() != "w" {
		t.Errorf("List(a) = %v", got)
	}

	_, err = c.Resource(configMaps).List(ctx, metav1.ListOptions{FieldSelector: "data.k=v"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("field selector on data: %v, want BadRequest", err)
	}
	_, err = c.Resource(configMaps).Namespace("a").Create(ctx, configMap("a", "x", nil), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	_, err = c.Resource(configMaps).Namespace("a").Create(ctx, configMap("b", "y", nil), metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("create in another namespace: %v, want BadRequest", err)
	}
	noKind := configMap("a", "y", nil)
	noKind.SetKind("")
	_, err = c.Resource(configMaps).Namespace("a").Create(ctx, noKind, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("create without kind: %v, want BadRequest", err)
	}
	_, err = c.Resource(configMaps).Namespace("a").Get(ctx, "nope", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get missing: %v, want NotFound", err)
	}
	_, err = c.Resource(configMaps).Watch(ctx, metav1.ListOptions{})
	if err == nil {
		t.Error("watch: no error")
	}
}

func TestVersionIsNotPartOfTheKey(t *testing.T) {
	c := newCluster(memcluster.Options{})
	mustCreate(t, c, deployments, parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}}"))
	beta := deployments
	beta.Version = "v1beta1"
	got, err := c.Resource(beta).Namespace("ns").Get(context.Background(), "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != "apps/v1" {
		t.Errorf("apiVersion = %q, want it as stored", got.GetAPIVersion())
	}
}

func TestGenerateNameIsDeterministic(t *testing.T) {
	run := func() []string {
		c := newCluster(memcluster.Options{})
		var names []string
		for range 3 {
			obj := configMap("ns", "", nil)
			obj.SetGenerateName("job-")
			names = append(names, mustCreate(t, c, configMaps, obj).GetName())
		}
		return names
	}
	first, second := run(), run()
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("names differ between runs: %v, %v", first, second)
	}
	pattern := regexp.MustCompile(`^job-[a-z0-9]{5}$`)
	seen := map[string]bool{}
	for _, n := range first {
		if !pattern.MatchString(n) || seen[n] {
			t.Errorf("name %q: not job- and 5 lowercase alphanumerics, or repeated", n)
		}
		seen[n] = true
	}

	c := newCluster(memcluster.Options{})
	_, err := c.Resource(configMaps).Namespace("ns").Create(context.Background(), configMap("ns", "", nil), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("create without name: %v, want Invalid", err)
	}
}

func TestUpdateConflict(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(configMaps).Namespace("ns")
	v1 := mustCreate(t, c, configMaps, configMap("ns", "x", nil))

	next := v1.DeepCopy()
	next.Object["data"] = map[string]any{"k": "2"}
	v2, err := r.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v2.GetResourceVersion() != "2" {
		t.Errorf("resourceVersion after update = %q, want 2", v2.GetResourceVersion())
	}
	// next still carries resourceVersion 1.
	next.Object["data"] = map[string]any{"k": "3"}
	if _, err := r.Update(ctx, next, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: %v, want Conflict", err)
	}
	next.SetResourceVersion("")
	v3, err := r.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
	if v3.GetResourceVersion() != "3" || v3.GetUID() != v1.GetUID() || nested(v3, "metadata", "creationTimestamp") != nested(v1, "metadata", "creationTimestamp") {
		t.Errorf("after unconditional update: %v", v3.Object["metadata"])
	}
	missing := configMap("ns", "nope", nil)
	if _, err := r.Update(ctx, missing, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing object: %v, want NotFound", err)
	}
}

func TestGeneration(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(deployments).Namespace("ns")
	cur := mustCreate(t, c, deployments, parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns}, spec: {replicas: 1}}"))
	c.TakeChanges()

	step := func(what string, change func(*unstructured.Unstructured), sub string, wantGeneration int64) {
		t.Helper()
		next := cur.DeepCopy()
		change(next)
		var err error
		cur, err = r.Update(ctx, next, metav1.UpdateOptions{}, subresources(sub)...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if cur.GetGeneration() != wantGeneration {
			t.Errorf("%s: generation %d, want %d", what, cur.GetGeneration(), wantGeneration)
		}
	}
	step("label", func(o *unstructured.Unstructured) { o.SetLabels(map[string]string{"a": "b"}) }, "", 1)
	step("spec", func(o *unstructured.Unstructured) { o.Object["spec"] = map[string]any{"replicas": int64(2)} }, "", 2)
	step("status", func(o *unstructured.Unstructured) { o.Object["status"] = map[string]any{"replicas": int64(2)} }, "status", 2)
	rv := cur.GetResourceVersion()
	step("nothing", func(*unstructured.Unstructured) {}, "", 2)
	if cur.GetResourceVersion() != rv {
		t.Errorf("an update that changes nothing changed resourceVersion %s to %s", rv, cur.GetResourceVersion())
	}
	wantChanges(t, c, "Modified deployments ns/d 2\nModified deployments ns/d 3\nModified deployments ns/d 4")
}

func subresources(sub string) []string {
	if sub == "" {
		return nil
	}
	return []string{sub}
}

func TestStatusSubresource(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(deployments).Namespace("ns")
	cur := mustCreate(t, c, deployments, parse(t, "{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns, labels: {a: b}}, spec: {replicas: 1}}"))

	next := cur.DeepCopy()
	next.Object["spec"] = map[string]any{"replicas": int64(5)}
	next.SetLabels(nil)
	next.Object["status"] = map[string]any{"ready": int64(1)}
	got, err := r.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Object["spec"], got.GetLabels(), got.Object["status"]) != "map[replicas:1] map[a:b] map[ready:1]" {
		t.Errorf("after a status update: spec %v, labels %v, status %v", got.Object["spec"], got.GetLabels(), got.Object["status"])
	}

	// A status patch changes only the status, even when it says more.
	got, err = r.Patch(ctx, "d", "application/merge-patch+json", []byte(`{"spec":{"replicas":9},"status":{"ready":2}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Object["spec"], got.Object["status"]) != "map[replicas:1] map[ready:2]" {
		t.Errorf("after a status patch: spec %v, status %v", got.Object["spec"], got.Object["status"])
	}

	// A write to the object takes it as sent, status included.
	next = got.DeepCopy()
	delete(next.Object, "status")
	got, err = r.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found := got.Object["status"]; found {
		t.Errorf("status = %v after an update without it", got.Object["status"])
	}

	if _, err := r.Get(ctx, "d", metav1.GetOptions{}, "eviction"); !apierrors.IsNotFound(err) {
		t.Errorf("get of an unknown subresource: %v, want NotFound", err)
	}
}

func TestAdd(t *testing.T) {
	c := newCluster(memcluster.Options{})
	fixture := parse(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: f, namespace: ns, uid: fixed, resourceVersion: '41'}}")
	if err := c.Add(configMaps, fixture); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(configMaps, configMap("ns", "g", nil)); err != nil {
		t.Fatal(err)
	}
	if changes := c.TakeChanges(); len(changes) != 0 {
		t.Errorf("Add recorded changes: %s", describe(changes))
	}
	f, g := mustGet(t, c, configMaps, "ns", "f"), mustGet(t, c, configMaps, "ns", "g")
	if f.GetUID() != "fixed" || f.GetResourceVersion() != "41" {
		t.Errorf("fixture's uid and resourceVersion not kept: %v", f.Object["metadata"])
	}
	// The counter stays above the versions seen.
	if g.GetResourceVersion() != "42" || g.GetGeneration() != 0 || g.GetUID() == "" {
		t.Errorf("assigned metadata: %v", g.Object["metadata"])
	}
	if err := c.Add(configMaps, configMap("ns", "", nil)); err == nil {
		t.Error("Add without a name: no error")
	}
}

func TestTakeChanges(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	r := c.Resource(configMaps).Namespace("ns")
	mustCreate(t, c, configMaps, configMap("ns", "a", nil))
	if _, err := r.Patch(ctx, "a", "application/merge-patch+json", []byte(`{"data":{"k":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	changes := c.TakeChanges()
	if got := describe(changes); got != "Added configmaps ns/a 1\nModified configmaps ns/a 2\nDeleted configmaps ns/a 3" {
		t.Fatalf("changes:\n%s", got)
	}
	if changes[0].Old != nil {
		t.Errorf("Added has Old %v", changes[0].Old)
	}
	if nested(changes[1].Old, "data", "k") != "v" || nested(changes[1].New, "data", "k") != "2" {
		t.Errorf("Modified: old %v, new %v", changes[1].Old.Object["data"], changes[1].New.Object["data"])
	}
	if nested(changes[2].New, "data", "k") != "2" {
		t.Errorf("Deleted: new %v, want the object as it was last", changes[2].New.Object["data"])
	}
	if changes[0].Resource != configMaps {
		t.Errorf("resource = %v", changes[0].Resource)
	}
	if again := c.TakeChanges(); len(again) != 0 {
		t.Errorf("changes not forgotten: %s", describe(again))
	}
}

func TestConcurrentUse(t *testing.T) {
	c := newCluster(memcluster.Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			r := c.Resource(configMaps).Namespace("ns")
			name := fmt.Sprintf("cm-%d", i)
			if _, err := r.Create(ctx, configMap("ns", name, nil), metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			if _, err := r.Patch(ctx, name, "application/merge-patch+json", []byte(`{"data":{"k":"2"}}`), metav1.PatchOptions{}); err != nil {
				t.Error(err)
			}
			_, _ = r.List(ctx, metav1.ListOptions{})
		}()
	}
	wg.Wait()
	if n := len(c.TakeChanges()); n != 16 {
		t.Errorf("%d changes, want 16", n)
	}
}
