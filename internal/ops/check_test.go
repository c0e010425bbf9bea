package ops

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// configMapResolver knows one kind, as a dry-run stand-in would.
type configMapResolver struct{}

func (configMapResolver) Resolve(apiVersion, kind string) (kube.Resource, error) {
	return kube.Resource{
		GVR:        schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		GVK:        schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Namespaced: true,
	}, nil
}

// Operations built in code skip Parse; Check still refuses incomplete ones.
func TestCheckOperationsBuiltInCode(t *testing.T) {
	a := &Applier{Resolver: configMapResolver{}}
	cm := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "n"}}}
	tests := []struct {
		op   Operation
		want string
	}{
		{Operation{Type: "Upsert"}, `operation 0 (Upsert): unknown operation "Upsert"`},
		{Operation{Index: 3, Type: Create}, "operation 3 (Create): object is missing (Create needs it)"},
		{Operation{Type: CreateOrUpdate, Object: &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap"}}}, "object.metadata.name is missing"},
		{Operation{Type: Delete, Kind: "cm"}, "operation 0 (Delete cm): name is missing"},
		{Operation{Type: MergePatch, Kind: "cm", Namespace: "n", Name: "c"}, "mergePatch is missing"},
		{Operation{Type: JSONPatch, Kind: "cm", Namespace: "n", Name: "c"}, "jsonPatch is missing"},
		{Operation{Type: JQPatch, Kind: "cm", Namespace: "n", Name: "c"}, "jqFilter is missing"},
		{Operation{Type: Delete, Kind: "cm", Name: "c"}, "operation 0 (Delete v1/ConfigMap c): namespace: required: ConfigMap is namespaced"},
		{Operation{Type: Create, Object: cm}, ""},
	}
	for _, tt := range tests {
		err := a.Check([]Operation{tt.op})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.op.String(), err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want %q", tt.op.String(), err, tt.want)
		}
	}
}
