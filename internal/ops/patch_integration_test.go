package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func TestIntegrationMergePatch(t *testing.T) {
	e := newEnv(t)
	e.configMap("a", map[string]any{"keep": "1", "drop": "2"})
	e.mustApply(`
operation: MergePatch
kind: ConfigMap
namespace: %NS%
name: a
mergePatch:
  metadata: {labels: {patched: "yes"}}
  data: {drop: null, added: "3"}
`)
	got := e.mustGet(configMaps, "a")
	if fmt.Sprint(nested(got, "data")) != "map[added:3 keep:1]" || got.GetLabels()["patched"] != "yes" {
		t.Errorf("patched %v", got.Object)
	}
}

func TestIntegrationJSONPatch(t *testing.T) {
	e := newEnv(t)
	e.configMap("a", map[string]any{"from": "x"})
	e.mustApply(`
operation: JSONPatch
kind: ConfigMap
namespace: %NS%
name: a
jsonPatch:
- {op: test, path: /data/from, value: x}
- {op: move, from: /data/from, path: /data/to}
- {op: add, path: /metadata/labels, value: {patched: "yes"}}
`)
	got := e.mustGet(configMaps, "a")
	if fmt.Sprint(nested(got, "data")) != "map[to:x]" || got.GetLabels()["patched"] != "yes" {
		t.Errorf("patched %v", got.Object)
	}

	// A failing test op fails the operation and changes nothing.
	err := e.apply(`{operation: JSONPatch, kind: ConfigMap, namespace: %NS%, name: a, jsonPatch: [{op: test, path: /data/to, value: "y"}, {op: remove, path: /data/to}]}`)
	wantErr(t, err, fmt.Sprintf("operation 0 (JSONPatch v1/ConfigMap %s/a): ", e.ns))
	if nested(e.mustGet(configMaps, "a"), "data", "to") != "x" {
		t.Error("a JSON patch whose test failed was applied")
	}
}

func TestIntegrationJQPatch(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Widget"})
	e.object(gvr, "Widget", "w", map[string]any{"replicas": int64(3), "tags": []any{"a"}})
	e.mustApply(`{operation: JQPatch, kind: Widget, namespace: %NS%, name: w, jqFilter: '.spec.replicas += 1 | .spec.tags += ["b"]'}`)
	got := e.mustGet(gvr, "w")
	if nested(got, "spec", "replicas") != int64(4) || fmt.Sprint(nested(got, "spec", "tags")) != "[a b]" {
		t.Fatalf("patched %v", got.Object)
	}

	// A filter that changes nothing writes nothing.
	e.mustApply(`{operation: JQPatch, kind: Widget, namespace: %NS%, name: w, jqFilter: '.spec.replicas = 4'}`)
	if rv := e.mustGet(gvr, "w").GetResourceVersion(); rv != got.GetResourceVersion() {
		t.Errorf("resourceVersion %s -> %s: written though unchanged", got.GetResourceVersion(), rv)
	}

	// The filter result may leave out what identifies the object.
	e.mustApply(`{operation: JQPatch, kind: Widget, namespace: %NS%, name: w, jqFilter: '{spec: {replicas: 1}}'}`)
	if got := e.mustGet(gvr, "w"); nested(got, "spec", "replicas") != int64(1) || nested(got, "spec", "tags") != nil {
		t.Errorf("replaced with %v", got.Object)
	}

	for _, tt := range []struct{ filter, want string }{
		{`.spec.replicas = 1, .spec.replicas = 2`, "jqFilter returned 2 values; it must return exactly one"},
		{`.spec.replicas`, "jqFilter returned number 1; it must return the whole new object"},
		{`empty`, "jqFilter returned 0 values"},
		{`.spec.replicas + "x"`, "cannot add"},
	} {
		err := e.apply(fmt.Sprintf(`{operation: JQPatch, kind: Widget, namespace: %%NS%%, name: w, jqFilter: '%s'}`, tt.filter))
		wantErr(t, err, "operation 0 (JQPatch "+gvr.GroupVersion().String()+"/Widget "+e.ns+"/w): ", tt.want)
	}
}

// TestIntegrationJQPatchConcurrently has writers race to increment one
// counter: each lost race is a conflict that must be retried, so the final
// count shows none was lost.
func TestIntegrationJQPatchConcurrently(t *testing.T) {
	e := newEnv(t)
	e.configMap("counter", map[string]any{"n": "0"})
	ops, err := Parse([]byte(fmt.Sprintf(`{operation: JQPatch, kind: ConfigMap, namespace: %s, name: counter, jqFilter: '.data.n |= (tonumber + 1 | tostring)'}`, e.ns)))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	e.concurrently(n, func(int) error { return e.a.Apply(context.Background(), ops) })
	if got := nested(e.mustGet(configMaps, "counter"), "data", "n"); got != fmt.Sprint(n) {
		t.Errorf("counter = %v, want %d", got, n)
	}
}

func TestIntegrationIgnoreMissingObject(t *testing.T) {
	e := newEnv(t)
	patches := map[string]string{
		MergePatch: "mergePatch: {data: {a: b}}",
		JSONPatch:  "jsonPatch: [{op: add, path: /data, value: {}}]",
		JQPatch:    "jqFilter: .data.a = \"b\"",
	}
	for _, typ := range []string{MergePatch, JSONPatch, JQPatch} {
		file := fmt.Sprintf("operation: %s\nkind: ConfigMap\nnamespace: %%NS%%\nname: missing\n%s\n", typ, patches[typ])
		err := e.apply(file)
		wantErr(t, err, fmt.Sprintf("operation 0 (%s v1/ConfigMap %s/missing): ", typ, e.ns), "not found", "set ignoreMissingObject: true")
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: not a NotFound error: %v", typ, err)
		}
		if err := e.apply(file + "ignoreMissingObject: false\n"); err == nil {
			t.Errorf("%s with ignoreMissingObject false: no error", typ)
		}
		if err := e.apply(file + "ignoreMissingObject: true\n"); err != nil {
			t.Errorf("%s with ignoreMissingObject true: %v", typ, err)
		}
	}
	if e.get(configMaps, "missing") != nil {
		t.Error("a patch created the missing object")
	}
}

func TestIntegrationStatusSubresource(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Widget", Status: true})
	e.object(gvr, "Widget", "w", map[string]any{"size": int64(1)})
	status := func() string { return fmt.Sprint(nested(e.mustGet(gvr, "w"), "status")) }

	// Without the subresource, the API server ignores .status.
	e.mustApply(`{operation: MergePatch, kind: Widget, namespace: %NS%, name: w, mergePatch: {status: {phase: Ignored}}}`)
	if s := status(); s != "<nil>" {
		t.Errorf("status written without the subresource: %s", s)
	}

	e.mustApply(`
- {operation: MergePatch, kind: Widget, namespace: %NS%, name: w, subresource: status, mergePatch: {status: {phase: Merged}}}
- {operation: JSONPatch, kind: Widget, namespace: %NS%, name: w, subresource: status, jsonPatch: [{op: add, path: /status/json, value: true}]}
- {operation: JQPatch, kind: Widget, namespace: %NS%, name: w, subresource: /status, jqFilter: '.status.jq = .spec.size | .spec.size = 99'}
`)
	if s := status(); s != "map[jq:1 json:true phase:Merged]" {
		t.Errorf("status = %s", s)
	}
	if size := nested(e.mustGet(gvr, "w"), "spec", "size"); size != int64(1) {
		t.Errorf("a status update changed spec.size to %v", size)
	}
}

func TestIntegrationMissingSubresource(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Widget"})
	e.object(gvr, "Widget", "w", nil)
	// The object exists, so ignoreMissingObject must not hide the mistake.
	for _, op := range []string{
		`{operation: MergePatch, kind: Widget, namespace: %NS%, name: w, subresource: status, ignoreMissingObject: true, mergePatch: {status: {a: 1}}}`,
		`{operation: JQPatch, kind: Widget, namespace: %NS%, name: w, subresource: status, ignoreMissingObject: true, jqFilter: .status.a = 1}`,
	} {
		err := e.apply(op)
		wantErr(t, err, `the object exists, but Widget has no subresource "status"`)
		if err != nil && !strings.HasPrefix(err.Error(), "operation 0 (") {
			t.Errorf("error does not name the operation: %v", err)
		}
	}
	// A missing object with a subresource is still just missing.
	if err := e.apply(`{operation: MergePatch, kind: Widget, namespace: %NS%, name: nope, subresource: status, ignoreMissingObject: true, mergePatch: {status: {a: 1}}}`); err != nil {
		t.Errorf("missing object: %v", err)
	}
}
