package ops

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func TestIntegrationStatus(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Widget", Status: true})
	e.object(gvr, "Widget", "w", map[string]any{"size": int64(1)})
	file := func(status string) string {
		return "{operation: Status, kind: Widget, namespace: %NS%, name: w, observedGeneration: true, status: " + status + "}"
	}

	// The first write changes the status.
	before := e.mustGet(gvr, "w")
	e.mustApplyFor("h.sh", file(`{phase: Ready, db: {host: a, port: 5432}}`))
	got := e.mustGet(gvr, "w")
	if fmt.Sprint(nested(got, "status")) != "map[db:map[host:a port:5432] observedGeneration:1 phase:Ready]" {
		t.Errorf("status = %v", nested(got, "status"))
	}
	if got.GetResourceVersion() == before.GetResourceVersion() {
		t.Error("resourceVersion did not change")
	}

	// The same status again writes nothing.
	e.mustApplyFor("h.sh", file(`{phase: Ready, db: {host: a}}`))
	if again := e.mustGet(gvr, "w"); again.GetResourceVersion() != got.GetResourceVersion() {
		t.Errorf("an unchanged status was written: resourceVersion %s, then %s", got.GetResourceVersion(), again.GetResourceVersion())
	}

	// A new generation is observed.
	_, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).Patch(context.Background(), "w", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.mustApplyFor("h.sh", file(`{phase: Ready}`))
	got = e.mustGet(gvr, "w")
	if g := nested(got, "status", "observedGeneration"); g != got.GetGeneration() || g != int64(2) {
		t.Errorf("observedGeneration %v, generation %d", g, got.GetGeneration())
	}

	// null removes a key, nested too; other keys stay.
	e.mustApply(`{operation: Status, kind: widgets, namespace: %NS%, name: w, status: {phase: null, db: {port: null}}}`)
	if s := fmt.Sprint(nested(e.mustGet(gvr, "w"), "status")); s != "map[db:map[host:a] observedGeneration:2]" {
		t.Errorf("status = %s", s)
	}

	// The object's other fields are not written by Status.
	if size := nested(e.mustGet(gvr, "w"), "spec", "size"); size != int64(2) {
		t.Errorf("spec.size = %v", size)
	}
}

func TestIntegrationStatusConcurrently(t *testing.T) {
	e := newEnv(t)
	gvr := e.crd(testcluster.CRD{Kind: "Widget", Status: true})
	e.object(gvr, "Widget", "w", nil)
	const n = 6
	e.concurrently(n, func(i int) error {
		ops, err := Parse([]byte(e.expand(fmt.Sprintf(`{operation: Status, kind: Widget, namespace: %s, name: w, status: {writer%d: %d}}`, e.ns, i, i))))
		if err != nil {
			return err
		}
		return e.a.Apply(context.Background(), ops)
	})
	// Each write merged into what the others wrote.
	status, _ := nested(e.mustGet(gvr, "w"), "status").(map[string]any)
	if len(status) != n {
		t.Errorf("status = %v, want the keys of all %d writers", status, n)
	}
}

func TestIntegrationStatusErrors(t *testing.T) {
	e := newEnv(t)
	plain := e.crd(testcluster.CRD{Kind: "Gadget"})
	withStatus := e.crd(testcluster.CRD{Kind: "Widget", Status: true})
	e.object(plain, "Gadget", "g", nil)
	e.configMap("c", nil)

	for _, tt := range []struct {
		file string
		gvr  schema.GroupVersionResource
		name string
	}{
		{`{operation: Status, kind: Gadget, namespace: %NS%, name: g, status: {phase: Ready}}`, plain, "g"},
		// Not even ignoreMissingObject hides it: the object exists.
		{`{operation: Status, kind: ConfigMap, namespace: %NS%, name: c, status: {phase: Ready}, ignoreMissingObject: true}`, configMaps, "c"},
	} {
		err := e.apply(tt.file)
		wantErr(t, err, "has no status subresource, so Status cannot write it", "subresources: {status: {}}")
		if nested(e.mustGet(tt.gvr, tt.name), "status") != nil {
			t.Errorf("%s: status written", tt.name)
		}
	}

	err := e.apply(`{operation: Status, kind: Widget, namespace: %NS%, name: missing, status: {phase: Ready}}`)
	wantErr(t, err, `widgets.`+withStatus.Group+` "missing" not found`, "set ignoreMissingObject: true")
	if !apierrors.IsNotFound(err) {
		t.Errorf("not a NotFound error: %v", err)
	}
	e.mustApply(`{operation: Status, kind: Widget, namespace: %NS%, name: missing, status: {phase: Ready}, ignoreMissingObject: true}`)
}
