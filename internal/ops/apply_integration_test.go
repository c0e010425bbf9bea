package ops

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// env is a namespace of the test cluster and an Applier for it.
type env struct {
	t       *testing.T
	c       *testcluster.Cluster
	clients *kube.Clients
	ns      string
	a       *Applier
	// crdAPIVersion and crdKind name the test's own CRD: earlier tests'
	// CRDs with the same kind may still be terminating, so the test's
	// operations must not name the kind alone.
	crdAPIVersion, crdKind string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := testcluster.Get(t)
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &env{
		t: t, c: c, clients: clients, ns: c.Namespace(t),
		a: &Applier{Dynamic: c.Dynamic, Resolver: clients.Resolver},
	}
}

// crd installs a CRD and makes the resolver see it.
func (e *env) crd(d testcluster.CRD) schema.GroupVersionResource {
	e.t.Helper()
	gvr := e.c.InstallCRD(e.t, d)
	e.clients.Resolver.Refresh()
	e.crdAPIVersion, e.crdKind = gvr.GroupVersion().String(), d.Kind
	return gvr
}

// apply parses and applies an operations file; %NS% stands for the test's
// namespace.
func (e *env) apply(file string) error {
	e.t.Helper()
	ops, err := Parse([]byte(e.expand(file)))
	if err != nil {
		e.t.Fatalf("Parse: %v", err)
	}
	return e.a.Apply(context.Background(), ops)
}

// expand puts the test's namespace for %NS%, and the test CRD's
// apiVersion into every flow-style operation that names its kind alone
// ("{operation: X, kind: Widget,"), so that the kind resolves to this
// test's CRD.
func (e *env) expand(file string) string {
	file = strings.ReplaceAll(file, "%NS%", e.ns)
	if e.crdKind != "" {
		re := regexp.MustCompile(`(operation: \w+, )kind: ` + regexp.QuoteMeta(e.crdKind) + `,`)
		file = re.ReplaceAllString(file, "${1}apiVersion: "+e.crdAPIVersion+", kind: "+e.crdKind+",")
	}
	return file
}

func (e *env) mustApply(file string) {
	e.t.Helper()
	if err := e.apply(file); err != nil {
		e.t.Fatalf("Apply: %v", err)
	}
}

// get returns the object, or nil when it does not exist.
func (e *env) get(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	e.t.Helper()
	obj, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return obj
}

func (e *env) mustGet(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	e.t.Helper()
	obj := e.get(gvr, name)
	if obj == nil {
		e.t.Fatalf("%s %s/%s does not exist", gvr.Resource, e.ns, name)
	}
	return obj
}

func (e *env) create(gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(e.ns)
	got, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) configMap(name string, data map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	return e.create(configMaps, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": data,
	})
}

// object creates the object name of the custom kind that gvr serves,
// with spec unless it is nil.
func (e *env) object(gvr schema.GroupVersionResource, kind, name string, spec map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	obj := map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name}}
	if spec != nil {
		obj["spec"] = spec
	}
	return e.create(gvr, obj)
}

// eventually polls cond for up to 30 seconds.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		e.t.Fatalf("never happened: %s", what)
	}
}

// concurrently calls write(0) to write(n-1) at once, and fails the test
// for each that returns an error.
func (e *env) concurrently(n int, write func(i int) error) {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			e.t.Errorf("writer %d: %v", i, err)
		}
	}
}

func nested(obj *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	return v
}

// managers returns the field managers recorded on obj.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager+"/"+string(m.Operation))
	}
	return out
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not contain %q:\n%v", p, err)
		}
	}
}

func TestIntegrationApplyNothingWhenAnOperationIsInvalid(t *testing.T) {
	e := newEnv(t)
	create := `
operation: Create
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: first, namespace: %NS%}
---
`
	tests := []struct {
		name, second string
		want         []string
		is           error
	}{
		{"unknown kind", "operation: Delete\nkind: NoSuchKindAnywhere\nnamespace: %NS%\nname: x\n",
			[]string{"operation 1 (Delete NoSuchKindAnywhere %NS%/x): kind: NoSuchKindAnywhere: unknown kind", "CRD is installed"}, kube.ErrUnknownKind},
		{"namespace missing", "operation: MergePatch\nkind: cm\nname: x\nmergePatch: {}\n",
			[]string{"operation 1 (MergePatch v1/ConfigMap x): namespace: required: ConfigMap is namespaced"}, nil},
		{"namespace on a cluster-scoped kind", "operation: DeleteInBackground\nkind: Namespace\nnamespace: %NS%\nname: x\n",
			[]string{"operation 1 (DeleteInBackground v1/Namespace %NS%/x): namespace: must be empty: Namespace is cluster-scoped"}, nil},
		{"object namespace missing", "operation: CreateOrUpdate\nobject: {kind: Secret, metadata: {name: s}}\n",
			[]string{"operation 1 (CreateOrUpdate v1/Secret s): object.metadata.namespace: required: Secret is namespaced"}, nil},
		{"wrong apiVersion for the kind", "operation: Delete\napiVersion: apps/v1\nkind: ConfigMap\nnamespace: %NS%\nname: x\n",
			[]string{"operation 1 (Delete apps/v1/ConfigMap %NS%/x): kind:", "unknown kind"}, kube.ErrUnknownKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.apply(create + tt.second)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.ReplaceAll(w, "%NS%", e.ns)
			}
			wantErr(t, err, want...)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error is not %v: %v", tt.is, err)
			}
			if e.get(configMaps, "first") != nil {
				t.Fatal("the valid first operation was applied")
			}
		})
	}

	// Parse refuses an invalid second operation, so there is nothing to apply.
	if _, err := Parse([]byte(strings.ReplaceAll(create, "%NS%", e.ns) + "operation: Delet\n")); err == nil {
		t.Fatal("Parse accepted an unknown operation")
	}
}

func TestIntegrationApplyStopsAtFirstError(t *testing.T) {
	e := newEnv(t)
	e.configMap("exists", nil)
	err := e.apply(`
- {operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %NS%}}}
- {operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: exists, namespace: %NS%}}}
- {operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: %NS%}}}
`)
	wantErr(t, err,
		fmt.Sprintf("operation 1 (Create v1/ConfigMap %s/exists): ", e.ns),
		"already exists", "use CreateIfNotExists or CreateOrUpdate",
		"(the operation before it was applied, the operation after it was not)")
	var oe *Error
	if !errors.As(err, &oe) || oe.Index != 1 {
		t.Errorf("want *Error with Index 1, got %#v", err)
	}
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("the API error is not reachable through the error: %v", err)
	}
	if e.get(configMaps, "a") == nil {
		t.Error("operation 0 was not applied")
	}
	if e.get(configMaps, "b") != nil {
		t.Error("operation 2 was applied after operation 1 failed")
	}
}

func TestIntegrationApplyResolvesKinds(t *testing.T) {
	e := newEnv(t)
	e.configMap("c", map[string]any{"a": "1"})
	// Short name, plural, lower case, no apiVersion.
	e.mustApply(`
- {operation: MergePatch, kind: cm, namespace: %NS%, name: c, mergePatch: {data: {b: "2"}}}
- {operation: MergePatch, kind: configmaps, namespace: %NS%, name: c, mergePatch: {data: {c: "3"}}}
- {operation: MergePatch, kind: configmap, apiVersion: v1, namespace: %NS%, name: c, mergePatch: {data: {d: "4"}}}
- {operation: Create, object: {kind: configmap, metadata: {name: made, namespace: %NS%}}}
`)
	got := nested(e.mustGet(configMaps, "c"), "data")
	if fmt.Sprint(got) != "map[a:1 b:2 c:3 d:4]" {
		t.Errorf("data = %v", got)
	}
	if made := e.mustGet(configMaps, "made"); made.GetKind() != "ConfigMap" {
		t.Errorf("made: kind %q", made.GetKind())
	}
}

func TestIntegrationClusterScoped(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Dial", Cluster: true})
	name := "dial-" + e.ns
	e.mustApply(fmt.Sprintf(`
operation: CreateOrUpdate
object: {apiVersion: %s, kind: Dial, metadata: {name: %s}, spec: {level: 1}}
---
operation: MergePatch
kind: dials
name: %s
mergePatch: {spec: {level: 2}}
`, gvr.GroupVersion(), name, name))
	obj, err := e.c.Dynamic.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lvl := nested(obj, "spec", "level"); lvl != int64(2) {
		t.Errorf("level = %v", lvl)
	}
	e.mustApply(fmt.Sprintf("operation: DeleteInBackground\nkind: Dial\nname: %s\n", name))
	if _, err := e.c.Dynamic.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Delete: %v", err)
	}
}

func TestIntegrationFieldManager(t *testing.T) {
	e := newEnv(t)
	e.mustApply(`
- {operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %NS%}, data: {w: "0"}}}
- {operation: MergePatch, kind: ConfigMap, namespace: %NS%, name: a, mergePatch: {data: {x: "1"}}}
`)
	got := strings.Join(managers(e.mustGet(configMaps, "a")), " ")
	if got != "hook-operator/Update" {
		t.Errorf("managers = %s, want hook-operator/Update (create and patch merged into one entry)", got)
	}

	e.a.FieldManager = "my-hooks"
	e.mustApply(`{operation: MergePatch, kind: ConfigMap, namespace: %NS%, name: a, mergePatch: {data: {y: "2"}}}`)
	got = strings.Join(managers(e.mustGet(configMaps, "a")), " ")
	if !strings.Contains(got, "my-hooks/Update") {
		t.Errorf("managers = %s, want my-hooks among them", got)
	}
}

func TestIntegrationCancelledContext(t *testing.T) {
	e := newEnv(t)
	ops, err := Parse([]byte(fmt.Sprintf(`{operation: Create, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %s}}}`, e.ns)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = e.a.Apply(ctx, ops)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("want context.Canceled, got %v", err)
	}
	if e.get(configMaps, "a") != nil {
		t.Error("created with a cancelled context")
	}
}

// Requeue operations are checked with the rest of the file, but applying
// the file writes nothing for them.
func TestIntegrationRequeue(t *testing.T) {
	e := newEnv(t)
	file := `
- {operation: Requeue, kind: ConfigMap, namespace: %NS%, name: later, after: 1m}
- {operation: Create, object: {kind: ConfigMap, metadata: {name: now, namespace: %NS%}}}
- {operation: Requeue, name: anything, after: 10s, binding: configmaps}
- {operation: Create, object: {kind: ConfigMap, metadata: {name: now, namespace: %NS%}}}
`
	err := e.applyFor("h.sh", file)
	// The second Create fails; the progress counts only applied operations.
	wantErr(t, err, fmt.Sprintf("operation 3 (Create v1/ConfigMap %s/now): ", e.ns), "already exists", "(the operation before it was applied)")
	if e.get(configMaps, "later") != nil {
		t.Error("a Requeue wrote an object")
	}
	ops := mustParse(t, fmt.Sprintf(`{operation: Requeue, kind: cm, namespace: %s, name: later, after: 90s}`, e.ns))
	if err := e.a.ApplyFor(context.Background(), "h.sh", ops); err != nil {
		t.Errorf("ApplyFor: %v", err)
	}
	if len(ops) != 1 || ops[0].Type != Requeue || ops[0].After != 90*time.Second {
		t.Errorf("parsed Requeue = %v", ops)
	}

	// Check resolves a Requeue's kind, and nothing of an invalid file is
	// applied.
	for _, bad := range []struct{ file, want string }{
		{`{operation: Requeue, kind: NoSuchKind, namespace: %NS%, name: x, after: 1m}`, "operation 1 (Requeue NoSuchKind %NS%/x after 1m0s): kind: NoSuchKind: unknown kind"},
		{`{operation: Requeue, kind: ConfigMap, name: x, after: 1m}`, "operation 1 (Requeue v1/ConfigMap x after 1m0s): namespace: required: ConfigMap is namespaced"},
	} {
		ops := mustParse(t, fmt.Sprintf("{operation: Create, object: {kind: ConfigMap, metadata: {name: first, namespace: %s}}}\n---\n%s", e.ns, e.expand(bad.file)))
		want := e.expand(bad.want)
		wantErr(t, e.a.Check(ops), want)
		wantErr(t, e.a.ApplyFor(context.Background(), "h.sh", ops), want)
		if e.get(configMaps, "first") != nil {
			t.Fatal("applied a file with an invalid Requeue")
		}
	}
}
