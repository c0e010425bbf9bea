package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// applyFor parses and applies an operations file as the hook hookName
// would; %NS% stands for the test's namespace.
func (e *env) applyFor(hookName, file string) error {
	e.t.Helper()
	ops, err := Parse([]byte(e.expand(file)))
	if err != nil {
		e.t.Fatalf("Parse: %v", err)
	}
	return e.a.ApplyFor(context.Background(), hookName, ops)
}

func (e *env) mustApplyFor(hookName, file string) {
	e.t.Helper()
	if err := e.applyFor(hookName, file); err != nil {
		e.t.Fatalf("ApplyFor: %v", err)
	}
}

// serverSideApply writes obj as field manager manager would with
// server-side apply.
func (e *env) serverSideApply(manager string, gvr schema.GroupVersionResource, obj map[string]any) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(e.ns)
	data, err := u.MarshalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	force := true
	_, err = e.c.Dynamic.Resource(gvr).Namespace(e.ns).Patch(context.Background(), u.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil {
		e.t.Fatal(err)
	}
}

// ownedBy returns the manager that owns the field f (as in
// "f:data"/"f:key") of obj, or "".
func ownedBy(obj *unstructured.Unstructured, path ...string) string {
	for _, m := range obj.GetManagedFields() {
		if m.FieldsV1 == nil {
			continue
		}
		needle := `"f:` + strings.Join(path, `":{"f:`) + `":`
		if strings.Contains(string(m.FieldsV1.Raw), needle) {
			return m.Manager + "/" + string(m.Operation)
		}
	}
	return ""
}

func TestIntegrationApply(t *testing.T) {
	e := newEnv(t)
	const hook = "db/sampledb.sh"
	file := func(data string) string {
		return `
operation: Apply
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: %NS%, labels: {app: db}}
  data: ` + data + "\n"
	}

	// Creates.
	e.mustApplyFor(hook, file(`{x: "1", y: "2"}`))
	got := e.mustGet(configMaps, "a")
	if fmt.Sprint(nested(got, "data")) != "map[x:1 y:2]" || got.GetLabels()["app"] != "db" {
		t.Fatalf("created %v", got.Object)
	}
	if m := strings.Join(managers(got), " "); m != "hook-operator/db/sampledb.sh/Apply" {
		t.Errorf("managers = %s, want the hook's own, with operation Apply", m)
	}

	// Changes a field; a field no longer given is removed, as the hook's
	// manager owned it; applying the same again writes nothing.
	e.mustApplyFor(hook, file(`{x: "10"}`))
	got = e.mustGet(configMaps, "a")
	if fmt.Sprint(nested(got, "data")) != "map[x:10]" {
		t.Errorf("after the second apply: data %v", nested(got, "data"))
	}
	e.mustApplyFor(hook, file(`{x: "10"}`))
	if again := e.mustGet(configMaps, "a"); again.GetResourceVersion() != got.GetResourceVersion() {
		t.Errorf("an unchanged apply wrote the object: resourceVersion %s, then %s", got.GetResourceVersion(), again.GetResourceVersion())
	}

	// An object copied from a binding context, with the fields the server
	// set, applies as well.
	js, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	e.mustApplyFor(hook, fmt.Sprintf(`{"operation": "Apply", "object": %s}`, js))

	// Another manager takes a field over: applying it again is a conflict
	// that names the field and the manager, and changes nothing.
	e.serverSideApply("someone-else", configMaps, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"x": "theirs"},
	})
	err = e.applyFor(hook, file(`{x: "10", z: "3"}`))
	wantErr(t, err, fmt.Sprintf("operation 0 (Apply v1/ConfigMap %s/a): conflict: other field managers own fields this object sets: .data.x (owned by \"someone-else\"", e.ns),
		"set force: true to take them over")
	if !apierrors.IsConflict(err) {
		t.Errorf("not a Conflict error: %v", err)
	}
	if got := e.mustGet(configMaps, "a"); fmt.Sprint(nested(got, "data")) != "map[x:theirs]" {
		t.Errorf("a conflicting apply changed the object: data %v", nested(got, "data"))
	}

	// force: true takes it over.
	e.mustApplyFor(hook, `
operation: Apply
force: true
object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %NS%, labels: {app: db}}, data: {x: "10", z: "3"}}
`)
	got = e.mustGet(configMaps, "a")
	if fmt.Sprint(nested(got, "data")) != "map[x:10 z:3]" {
		t.Errorf("after force: data %v", nested(got, "data"))
	}
	if owner := ownedBy(got, "data", "x"); owner != "hook-operator/db/sampledb.sh/Apply" {
		t.Errorf("data.x owned by %q after force", owner)
	}

	// Each hook has its field manager: another hook setting the same field
	// conflicts with the first instead of silently undoing it.
	err = e.applyFor("other.sh", file(`{x: "11"}`))
	wantErr(t, err, `.data.x (owned by "hook-operator/db/sampledb.sh"`, "set force: true")
}

func TestIntegrationApplyCRD(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Dial", Cluster: true})
	name := "dial-" + e.ns
	e.mustApplyFor("h.sh", fmt.Sprintf(`{operation: Apply, object: {kind: dials, metadata: {name: %s}, spec: {level: 1}}}`, name))
	got, err := e.c.Dynamic.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nested(got, "spec", "level") != int64(1) || got.GetAPIVersion() != gvr.GroupVersion().String() {
		t.Errorf("applied %v", got.Object)
	}
	t.Cleanup(func() { _ = e.c.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func TestIntegrationApplyWithParent(t *testing.T) {
	e := newEnv(t)
	parent := e.configMap("parent", nil)
	e.mustApplyFor("h.sh", `
operation: Apply
parent: {kind: ConfigMap, namespace: %NS%, name: parent}
object: {apiVersion: v1, kind: ConfigMap, metadata: {name: child, namespace: %NS%}, data: {a: "1"}}
`)
	child := e.mustGet(configMaps, "child")
	refs := child.GetOwnerReferences()
	if len(refs) != 1 {
		t.Fatalf("ownerReferences = %v", refs)
	}
	r := refs[0]
	if r.UID != parent.GetUID() || r.Kind != "ConfigMap" || r.APIVersion != "v1" || r.Name != "parent" ||
		r.Controller == nil || !*r.Controller || r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
		t.Errorf("ownerReference = %+v, want a controller reference to parent %s", r, parent.GetUID())
	}

	// The garbage collector deletes the child with its parent.
	if err := e.c.Dynamic.Resource(configMaps).Namespace(e.ns).Delete(context.Background(), "parent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) { return e.get(configMaps, "child") == nil, nil })
	if err != nil {
		t.Fatal("the garbage collector did not delete the child of the deleted parent within 60s")
	}

	// With its parent gone the operation is skipped, and nothing is
	// applied: the child would be garbage-collected at once. The other
	// operations of the file are applied.
	err = e.applyFor("h.sh", `{operation: Apply, parent: {kind: ConfigMap, namespace: %NS%, name: parent}, object: {kind: ConfigMap, metadata: {name: child, namespace: %NS%}}}
---
{operation: Create, object: {kind: ConfigMap, metadata: {name: after-skip, namespace: %NS%}}}`)
	if err != nil {
		t.Errorf("an Apply whose parent is gone failed the file: %v", err)
	}
	if e.get(configMaps, "child") != nil {
		t.Error("applied without its parent")
	}
	if e.get(configMaps, "after-skip") == nil {
		t.Error("the operation after the skipped one was not applied")
	}

	// A second controller is refused.
	e.configMap("parent", nil)
	err = e.applyFor("h.sh", `
operation: Apply
parent: {kind: ConfigMap, namespace: %NS%, name: parent}
object:
  kind: ConfigMap
  metadata:
    name: child
    namespace: %NS%
    ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: other, uid: 0b5e7f3c-1111-2222-3333-444455556666, controller: true}]
`)
	wantErr(t, err, "names ConfigMap other as its controller", "an object has only one controller")
}

func TestIntegrationApplyParentScope(t *testing.T) {
	e := newEnv(t)
	other := e.c.Namespace(t)
	e.configMap("parent", nil)
	tests := []struct{ name, apply, want string }{
		{"parent in another namespace",
			fmt.Sprintf(`{operation: Apply, parent: {kind: ConfigMap, namespace: %%NS%%, name: parent}, object: {kind: ConfigMap, metadata: {name: c, namespace: %s}}}`, other),
			fmt.Sprintf("operation 1 (Apply v1/ConfigMap %s/c, parent ConfigMap %s/parent): parent: v1/ConfigMap %s/parent can only own objects in its own namespace %s", other, e.ns, e.ns, e.ns)},
		{"namespaced parent of a cluster-scoped object",
			`{operation: Apply, parent: {kind: ConfigMap, namespace: %NS%, name: parent}, object: {kind: Namespace, metadata: {name: never-applied}}}`,
			fmt.Sprintf("parent: v1/ConfigMap %s/parent is namespaced, so it cannot own the cluster-scoped v1/Namespace never-applied", e.ns)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "{operation: Create, object: {kind: ConfigMap, metadata: {name: first, namespace: %NS%}}}\n---\n" + tt.apply
			ops, err := Parse([]byte(e.expand(file)))
			if err != nil {
				t.Fatal(err)
			}
			err = e.a.Check(ops)
			wantErr(t, err, tt.want)
			var oe *Error
			if !errors.As(err, &oe) || oe.Index != 1 || oe.Field != "parent" {
				t.Errorf("want *Error of operation 1, field parent: %#v", err)
			}
			wantErr(t, e.a.ApplyFor(context.Background(), "h.sh", ops), tt.want)
			if e.get(configMaps, "first") != nil {
				t.Error("an operation was applied")
			}
		})
	}
	// A cluster-scoped parent may own objects in any namespace.
	e.mustApplyFor("h.sh", fmt.Sprintf(`{operation: Apply, parent: {kind: Namespace, name: %s}, object: {kind: ConfigMap, metadata: {name: c, namespace: %%NS%%}}}`, other))
	refs := e.mustGet(configMaps, "c").GetOwnerReferences()
	if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.Kind == "Namespace" && r.Name == other }) {
		t.Errorf("ownerReferences = %v", refs)
	}
}
