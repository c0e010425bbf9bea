package applyset

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestID(t *testing.T) {
	id := ID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666")
	if !strings.HasPrefix(id, "workers-") || len(id) != len("workers-")+20 {
		t.Errorf("id %q: want workers- and 20 hex digits", id)
	}
	if again := ID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666"); again != id {
		t.Errorf("not deterministic: %q, then %q", id, again)
	}
	others := map[string]string{
		"another hook":   ID("db/other.sh", "workers", "0b5e7f3c-1111-2222-3333-444455556666"),
		"another parent": ID("db/sampledb.sh", "workers", "0b5e7f3c-1111-2222-3333-777777777777"),
		"another set":    ID("db/sampledb.sh", "workerz", "0b5e7f3c-1111-2222-3333-444455556666"),
		// The parts are separated, not just joined.
		"shifted parts": ID("db/sampledb.shw", "orkers", "0b5e7f3c-1111-2222-3333-444455556666"),
	}
	for what, other := range others {
		if other[len(other)-20:] == id[len(id)-20:] {
			t.Errorf("%s: same hash %q", what, other)
		}
	}

	// The longest set name still makes a valid label value and annotation key.
	long := ID(strings.Repeat("h", 300), strings.Repeat("s", MaxName), types.UID("u"))
	if msgs := utilvalidation.IsValidLabelValue(long); len(msgs) > 0 {
		t.Errorf("id %q is not a label value: %v", long, msgs)
	}
	if errs := validation.ValidateAnnotations(map[string]string{InventoryAnnotation(long): "v1/ConfigMap"}, field.NewPath("annotations")); len(errs) > 0 {
		t.Errorf("annotation %q: %v", InventoryAnnotation(long), errs)
	}
	if msgs := utilvalidation.IsQualifiedName(Label); len(msgs) > 0 {
		t.Errorf("label %q: %v", Label, msgs)
	}
	if got := InventoryAnnotation("workers-0123"); got != "applyset.hook-operator.dev/workers-0123" {
		t.Errorf("InventoryAnnotation = %q", got)
	}
}
