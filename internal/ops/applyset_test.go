package ops

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
