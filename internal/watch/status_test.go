package watch

import (
	"encoding/json"
	"testing"
)

// statusOnlyMaps is statusOnly on the objects' JSON, as the watch cache
// keeps them.
func statusOnlyMaps(t *testing.T, old, cur map[string]any) bool {
	t.Helper()
	o, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	return statusOnly(o, c)
}

func TestStatusOnly(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "a", "resourceVersion": "1", "generation": int64(1)},
			"spec":     map[string]any{"size": 1},
			"status":   map[string]any{"phase": "A"},
		}
	}
	a, b := base(), base()
	b["status"] = map[string]any{"phase": "B"}
	b["metadata"].(map[string]any)["resourceVersion"] = "2"
	if !statusOnlyMaps(t, a, b) {
		t.Error("a status and resourceVersion change is status-only")
	}
	c := base()
	c["spec"] = map[string]any{"size": 2}
	if statusOnlyMaps(t, a, c) {
		t.Error("a spec change is not status-only")
	}
	d := base()
	d["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	if statusOnlyMaps(t, a, d) {
		t.Error("a label change is not status-only")
	}
	e := base()
	e["metadata"].(map[string]any)["annotations"] = map[string]any{"applyset.hook-operator.dev/configs-1": "v1/ConfigMap"}
	if !statusOnlyMaps(t, a, e) {
		t.Error("an inventory annotation written by the runtime counts as its own write")
	}
}

func TestStatusOnlyComparesNumbersExactly(t *testing.T) {
	// 2^53+1 and 2^53 are one float64: decoded as floats they would compare
	// equal and hide a spec change.
	old := json.RawMessage(`{"spec":{"n":9007199254740993},"status":{"phase":"A"}}`)
	cur := json.RawMessage(`{"spec":{"n":9007199254740992},"status":{"phase":"B"}}`)
	if statusOnly(old, cur) {
		t.Error("a change of a large number is not status-only")
	}
	if statusOnly(old, json.RawMessage(`{`)) {
		t.Error("an object that does not decode counts as changed")
	}
}
