package watch

import "testing"

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
	if !statusOnly(a, b) {
		t.Error("a status and resourceVersion change is status-only")
	}
	c := base()
	c["spec"] = map[string]any{"size": 2}
	if statusOnly(a, c) {
		t.Error("a spec change is not status-only")
	}
	d := base()
	d["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	if statusOnly(a, d) {
		t.Error("a label change is not status-only")
	}
	e := base()
	e["metadata"].(map[string]any)["annotations"] = map[string]any{"applyset.hook-operator.dev/configs-1": "v1/ConfigMap"}
	if !statusOnly(a, e) {
		t.Error("an inventory annotation written by the runtime counts as its own write")
	}
	var o statusOwners
	o.add("h", "r", "ns", "a")
	if !o.has("h", "r", "ns", "a") || o.has("other", "r", "ns", "a") {
		t.Error("status owners are per hook and object")
	}
}
