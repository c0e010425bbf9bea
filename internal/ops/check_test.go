package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// kinds is a resolver that knows a few kinds, namespaced and
// cluster-scoped, without a cluster.
type kinds map[string]kube.Resource

func newKinds() kinds {
	k := kinds{}
	for _, r := range []struct {
		group, kind, plural string
		namespaced          bool
	}{
		{"", "ConfigMap", "configmaps", true},
		{"", "Secret", "secrets", true},
		{"", "Namespace", "namespaces", false},
		{"example.com", "Database", "databases", true},
		{"example.com", "Dial", "dials", false},
	} {
		res := kube.Resource{
			GVR:        schema.GroupVersionResource{Group: r.group, Version: "v1", Resource: r.plural},
			GVK:        schema.GroupVersionKind{Group: r.group, Version: "v1", Kind: r.kind},
			Namespaced: r.namespaced,
		}
		k[strings.ToLower(r.kind)] = res
		k[r.plural] = res
	}
	k["cm"] = k["configmap"]
	return k
}

func (k kinds) Resolve(apiVersion, kind string) (kube.Resource, error) {
	if res, ok := k[strings.ToLower(kind)]; ok {
		return res, nil
	}
	return kube.Resource{}, fmt.Errorf("%s: %w", kind, kube.ErrUnknownKind)
}

func TestCheckExtensions(t *testing.T) {
	a := &Applier{Resolver: newKinds()}
	tests := []struct {
		name, file string
		want       []string // none: valid
	}{
		{"Apply, parent in the same namespace", `{operation: Apply, parent: {kind: Database, namespace: a, name: db}, object: {kind: ConfigMap, metadata: {name: c, namespace: a}}}`, nil},
		{"Apply, cluster-scoped parent of a namespaced object", `{operation: Apply, parent: {kind: Dial, name: d}, object: {kind: ConfigMap, metadata: {name: c, namespace: a}}}`, nil},
		{"Apply, cluster-scoped parent of a cluster-scoped object", `{operation: Apply, parent: {kind: Namespace, name: n}, object: {kind: Dial, metadata: {name: d}}}`, nil},
		{"Apply, parent in another namespace", `{operation: Apply, parent: {kind: Database, namespace: b, name: db}, object: {kind: ConfigMap, metadata: {name: c, namespace: a}}}`,
			[]string{"operation 0 (Apply v1/ConfigMap a/c, parent Database b/db): parent: example.com/v1/Database b/db can only own objects in its own namespace b, not v1/ConfigMap a/c"}},
		{"Apply, namespaced parent of a cluster-scoped object", `{operation: Apply, parent: {kind: Database, namespace: a, name: db}, object: {kind: Namespace, metadata: {name: n}}}`,
			[]string{"parent: example.com/v1/Database a/db is namespaced, so it cannot own the cluster-scoped v1/Namespace n"}},
		{"Apply, parent without namespace", `{operation: Apply, parent: {kind: Database, name: db}, object: {kind: ConfigMap, metadata: {name: c, namespace: a}}}`,
			[]string{"parent.namespace: required: Database is namespaced"}},
		{"Apply, parent of unknown kind", `{operation: Apply, parent: {kind: Databse, name: db}, object: {kind: ConfigMap, metadata: {name: c, namespace: a}}}`,
			[]string{"parent.kind: Databse: unknown kind"}},
		{"Apply, object without namespace", `{operation: Apply, object: {kind: ConfigMap, metadata: {name: c}}}`,
			[]string{"object.metadata.namespace: required: ConfigMap is namespaced"}},

		{"ApplySet", `{operation: ApplySet, name: s, parent: {kind: Database, namespace: a, name: db}, objects: [{kind: ConfigMap, metadata: {name: c, namespace: a}}, {kind: Secret, metadata: {name: c, namespace: a}}]}`, nil},
		{"ApplySet, every problem", `{operation: ApplySet, name: s, parent: {kind: Database, namespace: a, name: db}, objects: [
			{kind: ConfigMap, metadata: {name: c, namespace: b}},
			{kind: Namespace, metadata: {name: n}},
			{kind: Nope, metadata: {name: x, namespace: a}},
			{kind: ConfigMap, metadata: {name: c2}},
			{kind: ConfigMap, metadata: {name: c3, namespace: a}},
			{kind: configmaps, metadata: {name: c3, namespace: a}}]}`,
			[]string{
				"operation 0 (ApplySet s of Database a/db): objects[0]: example.com/v1/Database a/db can only own objects in its own namespace a, not v1/ConfigMap b/c",
				"objects[1]: example.com/v1/Database a/db is namespaced, so it cannot own the cluster-scoped v1/Namespace n",
				"objects[2].kind: Nope: unknown kind",
				"objects[3].metadata.namespace: required: ConfigMap is namespaced",
				"objects[5]: v1/ConfigMap a/c3 is objects[4] already: each object may be given once",
			}},
		{"ApplySet, parent problem", `{operation: ApplySet, name: s, parent: {kind: Database, name: db}, objects: [{kind: Nope, metadata: {name: x}}]}`,
			[]string{"parent.namespace: required: Database is namespaced", "objects[0].kind: Nope: unknown kind"}},

		{"Status", `{operation: Status, kind: Database, namespace: a, name: db, status: {}}`, nil},
		{"Status, namespace missing", `{operation: Status, kind: Database, name: db, status: {}}`, []string{"operation 0 (Status example.com/v1/Database db): namespace: required: Database is namespaced"}},
		{"Status, unknown kind", `{operation: Status, kind: Widgt, namespace: a, name: w, status: {}}`, []string{"kind: Widgt: unknown kind"}},

		{"Requeue without kind", `{operation: Requeue, name: db, after: 1m}`, nil},
		{"Requeue", `{operation: Requeue, kind: Database, namespace: a, name: db, after: 1m}`, nil},
		{"Requeue, unknown kind", `{operation: Requeue, kind: Databse, namespace: a, name: db, after: 1m}`, []string{"operation 0 (Requeue Databse a/db after 1m0s): kind: Databse: unknown kind"}},
		{"Requeue, namespace on a cluster-scoped kind", `{operation: Requeue, kind: Dial, namespace: a, name: d, after: 1m}`, []string{"namespace: must be empty: Dial is cluster-scoped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Check(mustParse(t, tt.file))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			wantErrorsContaining(t, opErrors(t, err), err.Error(), tt.want)
		})
	}
}

// Operations built in code skip Parse; Check still refuses incomplete ones.
func TestCheckOperationsBuiltInCode(t *testing.T) {
	a := &Applier{Resolver: newKinds()}
	cm := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "n"}}}
	parent := &ObjectRef{Kind: "Database", Namespace: "n", Name: "db"}
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

		{Operation{Type: Apply}, "object is missing (Apply needs it)"},
		{Operation{Type: Apply, Object: cm, Name: "c", Parent: &ObjectRef{Kind: "Database"}}, "parent.name is missing"},
		{Operation{Type: ApplySet, Parent: parent}, "name is missing (ApplySet needs it)"},
		{Operation{Type: ApplySet, SetName: "s"}, "parent is missing (ApplySet needs it)"},
		{Operation{Type: ApplySet, SetName: "s", Parent: parent, Objects: []*unstructured.Unstructured{nil}}, "objects[0] is missing"},
		{Operation{Type: ApplySet, SetName: "s", Parent: parent, Objects: []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap"}}}}, "objects[0].metadata.name: required"},
		{Operation{Type: Status, Kind: "cm", Namespace: "n", Name: "c"}, "status is missing (Status needs it)"},
		{Operation{Type: Requeue, Name: "c"}, "after is 0s; it must be more than 0 and at most 24h0m0s"},
		{Operation{Type: Requeue, Name: "c", After: 25 * time.Hour}, "after is 25h0m0s"},
		{Operation{Type: Requeue, After: time.Second}, "name is missing (Requeue needs it)"},
		{Operation{Type: ApplySet, SetName: "s", Parent: parent}, ""},
		{Operation{Type: Status, Kind: "cm", Namespace: "n", Name: "c", Status: map[string]any{}}, ""},
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

// Apply skips Requeue operations: with nothing else in the file it does not
// touch the cluster at all (this Applier has no client).
func TestApplySkipsRequeue(t *testing.T) {
	a := &Applier{Resolver: newKinds()}
	ops := mustParse(t, `
- {operation: Requeue, kind: Database, namespace: a, name: db, after: 1m}
- {operation: Requeue, name: other, after: 2h, binding: databases}
`)
	if err := a.Apply(context.Background(), ops); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := a.ApplyFor(context.Background(), "db/hook.sh", ops); err != nil {
		t.Fatalf("ApplyFor: %v", err)
	}
	if len(ops) != 2 || ops[0].Type != Requeue || ops[0].Name != "db" || ops[1].Name != "other" || ops[1].After != 2*time.Hour || ops[1].Binding != "databases" {
		t.Errorf("parsed Requeues = %v", ops)
	}
	// Check validates them: an invalid one fails Apply too.
	bad := mustParse(t, `{operation: Requeue, kind: Nope, name: x, after: 1m}`)
	if err := a.Apply(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "kind: Nope: unknown kind") {
		t.Errorf("Apply of an unknown kind: %v", err)
	}
}
