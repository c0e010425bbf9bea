package ops

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestServedBy(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"spec": map[string]any{
			"group": "example.com", "scope": "Cluster",
			"names": map[string]any{"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "shortNames": []any{"gd"}},
			"versions": []any{
				map[string]any{"name": "v1beta1", "served": true},
				map[string]any{"name": "v1", "served": true},
				map[string]any{"name": "v2alpha1", "served": true},
				map[string]any{"name": "v2", "served": false},
			},
		},
	}}
	tests := []struct{ apiVersion, kind, want string }{
		{"", "Gadget", "example.com/v1, Resource=gadgets"},
		{"", "GADGETS", "example.com/v1, Resource=gadgets"},
		{"", "gd", "example.com/v1, Resource=gadgets"},
		{"example.com/v1beta1", "gadget", "example.com/v1beta1, Resource=gadgets"},
		{"example.com/v2", "Gadget", ""}, // not served
		{"other.com/v1", "Gadget", ""},   // another group
		{"", "Gizmo", ""},                // another kind
	}
	for _, tt := range tests {
		res, ok := servedBy(crd, tt.apiVersion, tt.kind)
		got := ""
		if ok {
			got = res.GVR.String()
			if res.GVK.Kind != "Gadget" || res.Namespaced {
				t.Errorf("servedBy(%q, %q): kind %s namespaced %v", tt.apiVersion, tt.kind, res.GVK.Kind, res.Namespaced)
			}
		}
		if got != tt.want {
			t.Errorf("servedBy(%q, %q) = %q, want %q", tt.apiVersion, tt.kind, got, tt.want)
		}
	}
}
