package ops

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestSetID(t *testing.T) {
	id := SetID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666")
	if !strings.HasPrefix(id, "workers-") || len(id) != len("workers-")+20 {
		t.Errorf("id %q: want workers- and 20 hex digits", id)
	}
	if again := SetID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666"); again != id {
		t.Errorf("not deterministic: %q, then %q", id, again)
	}
	others := map[string]string{
		"another hook":   SetID("db/other.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666"),
		"another parent": SetID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-777777777777"),
		"another set":    SetID("db/sampledb.sh", "workerz", "0b5e7f3c-1111-2222-3333-444455556666"),
		// The parts are separated, not just joined.
		"shifted parts": SetID("db/sampledb.shw", "orkers", "0b5e7f3c-1111-2222-3333-444455556666"),
	}
	for what, other := range others {
		if other[len(other)-20:] == id[len(id)-20:] {
			t.Errorf("%s: same hash %q", what, other)
		}
	}

	// The longest set name still makes a valid label value and annotation key.
	long := SetID(strings.Repeat("h", 300), strings.Repeat("s", maxSetName), types.UID("u"))
	if msgs := utilvalidation.IsValidLabelValue(long); len(msgs) > 0 {
		t.Errorf("id %q is not a label value: %v", long, msgs)
	}
	if errs := validation.ValidateAnnotations(map[string]string{InventoryAnnotation(long): "v1/ConfigMap"}, field.NewPath("annotations")); len(errs) > 0 {
		t.Errorf("annotation %q: %v", InventoryAnnotation(long), errs)
	}
	if msgs := utilvalidation.IsQualifiedName(SetLabel); len(msgs) > 0 {
		t.Errorf("label %q: %v", SetLabel, msgs)
	}
	if got := InventoryAnnotation("workers-0123"); got != "applyset.hook-operator.dev/workers-0123" {
		t.Errorf("InventoryAnnotation = %q", got)
	}
}

func TestInventory(t *testing.T) {
	inv, err := parseInventory("v1/Secret,apps/v1/Deployment, v1/ConfigMap,example.com/v1beta1/Widget")
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.String(); got != "v1/ConfigMap,apps/v1/Deployment,v1/Secret,example.com/v1beta1/Widget" {
		t.Errorf("String() = %q (sorted by kind, then group)", got)
	}
	current := inventory{}
	current.add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	current.add(schema.GroupVersionKind{Version: "v1", Kind: "Service"})
	if got := inv.union(current).String(); got != "v1/ConfigMap,apps/v1/Deployment,v1/Secret,v1/Service,example.com/v1/Widget" {
		t.Errorf("union = %q (the current version of Widget wins)", got)
	}
	if got := (inventory{}).String(); got != "" {
		t.Errorf("empty inventory = %q", got)
	}
	for _, s := range []string{"", "  "} {
		if inv, err := parseInventory(s); err != nil || len(inv) != 0 {
			t.Errorf("parseInventory(%q) = %v, %v", s, inv, err)
		}
	}
	for _, bad := range []string{"ConfigMap", "v1/", "/ConfigMap", "a/b/c/Kind", "v1/ConfigMap,,v1/Secret"} {
		if _, err := parseInventory(bad); err == nil {
			t.Errorf("parseInventory(%q) accepted it", bad)
		}
	}
}
