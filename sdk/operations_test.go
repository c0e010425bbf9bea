package sdk

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOperationErrors(t *testing.T) {
	ref := Ref{Kind: "ConfigMap", Namespace: "app", Name: "x"}
	for _, tc := range []struct {
		name string
		op   Operation
		want string
	}{
		{"typed object without TypeMeta", Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}), "Create: object: has no kind; set it"},
		{"nil object", Apply(nil), "Apply: object: required"},
		{"object not an object", CreateOrUpdate("apiVersion: v1"), `object: must be an object, got "apiVersion: v1"`},
		{"ApplySet object without kind", ApplySet(ref, "s", map[string]any{"metadata": map[string]any{"name": "a"}}), "ApplySet s: objects[0]: has no kind"},
		{"ApplySet without parent", Operation{Type: OpApplySet, SetName: "s"}, "ApplySet: parent: required"},
		{"merge patch not an object", MergePatch(ref, []string{"a"}), `MergePatch ConfigMap app/x: mergePatch: must be an object, got ["a"]`},
		{"merge patch missing", MergePatch(ref, nil), "mergePatch: required"},
		{"JSON patch not a list", MergePatch(ref, nil).withPatch(map[string]any{}), "jsonPatch: must be a list of steps, got {}"},
		{"status not an object", Status(ref, 3), "status: must be an object, got 3"},
		{"requeue without delay", Requeue(ref, 0), "Requeue ConfigMap app/x: after: 0s is not more than 0"},
		{"unknown type", Operation{Type: "Patch"}, `operation "Patch": unknown type`},
		{"unmarshalable", Status(ref, map[string]any{"f": func() {}}), "status: json: unsupported type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := json.Marshal(tc.op)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestOperationFieldsOnlyOfItsType checks that an option set on an
// operation that does not use it is not written (the runtime would refuse
// an unused field).
func TestOperationFieldsOnlyOfItsType(t *testing.T) {
	ref := Ref{Kind: "ConfigMap", Namespace: "app", Name: "x"}
	op := Delete(ref).WithForce().WithSubresource("status").WithIgnoreMissingObject().WithObservedGeneration().ForBinding("b").WithParent(ref)
	op.After = time.Second
	got, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"operation":"Delete","kind":"ConfigMap","namespace":"app","name":"x"}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func (op Operation) withPatch(p any) Operation {
	op.Type, op.Patch = OpJSONPatch, p
	return op
}

func TestJSONPatchSteps(t *testing.T) {
	ref := Ref{Kind: "ConfigMap", Namespace: "app", Name: "x"}
	got, err := json.Marshal(JSONPatch(ref,
		JSONPatchStep{Op: "add", Path: "/data/a", Value: nil},
		JSONPatchStep{Op: "test", Path: "/data/b", Value: ""},
		JSONPatchStep{Op: "remove", Path: "/data/c"},
		JSONPatchStep{Op: "copy", Path: "/data/d", From: "/data/e"},
	))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"operation":"JSONPatch","kind":"ConfigMap","namespace":"app","name":"x","jsonPatch":[` +
		`{"op":"add","path":"/data/a","value":null},{"op":"test","path":"/data/b","value":""},` +
		`{"op":"remove","path":"/data/c"},{"op":"copy","path":"/data/d","from":"/data/e"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, err = json.Marshal(JSONPatch(ref))
	if err != nil || !strings.Contains(string(got), `"jsonPatch":[]`) {
		t.Errorf("no steps: %s, %v", got, err)
	}
}

func TestObjectFromContextCanBeApplied(t *testing.T) {
	var o Object
	if err := json.Unmarshal([]byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "5"}}`), &o); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(Apply(&o))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"operation":"Apply","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"5"}}}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
