package ops

import (
	"strings"
	"testing"
	"time"
)

func TestParseExtensions(t *testing.T) {
	t.Run("ApplySet owner defaults to true, objects may be empty", func(t *testing.T) {
		ops := mustParse(t, `{operation: ApplySet, name: workers, parent: {kind: Database, namespace: ns, name: db}, objects: []}`)
		op := ops[0]
		if !op.Owner || op.SetName != "workers" || op.Name != "" || op.Objects == nil || len(op.Objects) != 0 || op.Force {
			t.Errorf("got %s: owner %v, set %q, name %q, objects %v", summary(op), op.Owner, op.SetName, op.Name, op.Objects)
		}
		if *op.Parent != (ObjectRef{Kind: "Database", Namespace: "ns", Name: "db"}) {
			t.Errorf("parent = %+v", *op.Parent)
		}
	})
	t.Run("objects, status and parent as strings", func(t *testing.T) {
		ops := mustParse(t, `
operation: ApplySet
name: s
parent: '{"kind": "Namespace", "name": "team-a"}'
objects: |
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: a, namespace: team-a}
    data: {n: "1"}
  - {kind: Secret, metadata: {name: b, namespace: team-a}}
---
operation: Status
kind: Widget
namespace: ns
name: w
status: |
  phase: Ready
  count: 2
  ratio: 0.5
`)
		want := []string{
			`ApplySet s of Namespace team-a objects=[{"apiVersion":"v1","data":{"n":"1"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"team-a"}},{"kind":"Secret","metadata":{"name":"b","namespace":"team-a"}}] owner`,
			`Status Widget ns/w status={"count":2,"phase":"Ready","ratio":0.5}`,
		}
		for i, w := range want {
			if got := summary(ops[i]); got != w {
				t.Errorf("operation %d:\n got %s\nwant %s", i, got, w)
			}
		}
		// Unstructured objects need int64.
		if v := ops[1].Status["count"]; v != int64(2) {
			t.Errorf("status.count = %#v, want int64(2)", v)
		}
		_ = ops[0].Objects[0].DeepCopy() // panics on number types unstructured does not allow
	})
	t.Run("Requeue without kind", func(t *testing.T) {
		ops := mustParse(t, `{"operation": "Requeue", "namespace": "ns", "name": "db", "after": "1h30m"}`)
		if ops[0].After != 90*time.Minute || ops[0].Kind != "" || ops[0].String() != "Requeue ns/db after 1h30m0s" {
			t.Errorf("got %s, after %s", ops[0].String(), ops[0].After)
		}
	})
	t.Run("Requeue bounds", func(t *testing.T) {
		for _, after := range []string{"1ns", "24h", "23h59m59s", "1s"} {
			mustParse(t, `{"operation": "Requeue", "name": "a", "after": "`+after+`"}`)
		}
	})
}

func TestParseExtensionsInvalid(t *testing.T) {
	cm := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}`
	parent := `"parent": {"kind": "Database", "namespace": "ns", "name": "db"}`
	tests := []struct {
		name, in string
		want     []string // the errors, each in full or a part of it, in order
	}{
		{"Apply without object", `{"operation": "Apply"}`, []string{"operation 0 (Apply): object: required by Apply"}},
		{"Apply with a target field", `{"operation": "Apply", "namespace": "ns", "object": ` + cm + `}`,
			[]string{"operation 0 (Apply v1/ConfigMap ns/c): namespace: not used by Apply: the target comes from object; set object.metadata.namespace instead"}},
		{"Apply with generateName", `{"operation": "Apply", "object": {"kind": "ConfigMap", "metadata": {"generateName": "c-", "namespace": "ns"}}}`,
			[]string{"object.metadata.name: required: Apply needs the name (server-side apply cannot use metadata.generateName)"}},
		{"Apply force not a boolean", `{"operation": "Apply", "force": "yes", "object": ` + cm + `}`,
			[]string{`operation 0 (Apply v1/ConfigMap ns/c): force: must be true or false, got string "yes"`}},
		{"Apply with subresource", `{"operation": "Apply", "subresource": "status", "object": ` + cm + `}`,
			[]string{"subresource: not used by Apply, only by MergePatch, JSONPatch, JQPatch"}},
		{"Apply parent not an object", `{"operation": "Apply", "parent": ["db"], "object": ` + cm + `}`,
			[]string{"parent: must be an object (inline, or a string holding it in JSON or YAML), got an array"}},
		{"parent without kind and name", `{"operation": "Apply", "parent": {"namespace": "ns"}, "object": ` + cm + `}`,
			[]string{"parent.kind: required", "parent.name: required"}},
		{"parent uid", `{"operation": "Apply", "parent": {"kind": "Database", "name": "db", "uid": "1234"}, "object": ` + cm + `}`,
			[]string{"operation 0 (Apply v1/ConfigMap ns/c, parent Database db): parent.uid: not needed: the parent is found by name, and its uid read from the cluster"}},
		{"parent unknown field", `{"operation": "Apply", "parent": {"kind": "Database", "name": "db", "controller": true}, "object": ` + cm + `}`,
			[]string{"parent.controller: unknown field: parent has only the fields apiVersion, kind, namespace, name"}},
		{"parent field typo", `{"operation": "Apply", "parent": {"kind": "Database", "nmae": "db"}, "object": ` + cm + `}`,
			[]string{`parent.nmae: unknown field: did you mean "name"?`, "parent.name: required"}},
		{"parent bad values", `{"operation": "Apply", "parent": {"apiVersion": "a/b/c", "kind": "", "namespace": "No", "name": "a/b"}, "object": ` + cm + `}`,
			[]string{`parent.apiVersion: "a/b/c" is not an apiVersion`, "parent.kind: must not be empty", `parent.name: "a/b" is not an object name`, `parent.namespace: "No" is not a namespace name`}},

		{"ApplySet without anything", `{"operation": "ApplySet"}`,
			[]string{"operation 0 (ApplySet): name: required by ApplySet", "parent: required by ApplySet", "objects: required by ApplySet"}},
		{"ApplySet name not a label", `{"operation": "ApplySet", "name": "Workers_1", ` + parent + `, "objects": []}`,
			[]string{`operation 0 (ApplySet Workers_1 of Database ns/db): name: "Workers_1" is not a set name`}},
		{"ApplySet name too long", `{"operation": "ApplySet", "name": "` + strings.Repeat("a", 41) + `", ` + parent + `, "objects": []}`,
			[]string{`name: "` + strings.Repeat("a", 41) + `" is too long: a set name has at most 40 characters`}},
		{"ApplySet objects not an array", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objects": {"kind": "ConfigMap"}}`,
			[]string{"operation 0 (ApplySet s of Database ns/db): objects: must be an array (inline, or a string holding it in JSON or YAML), got an object"}},
		{"ApplySet bad objects", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objects": [{"apiVersion": "v1", "metadata": {"name": "a"}}, 5, {"kind": "ConfigMap", "metadata": {"generateName": "x-"}}, {"kind": "ConfigMap", "metadata": {"name": 3}}]}`,
			[]string{"objects[0].kind: required", "objects[1]: must be an object, got number 5", "objects[2].metadata.name: required: ApplySet needs the name", "objects[3].metadata.name: must be a string, got number 3"}},
		{"ApplySet owner not a boolean", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objects": [], "owner": "no"}`,
			[]string{`owner: must be true or false, got string "no"`}},
		{"ApplySet with object", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objects": [], "object": ` + cm + `}`,
			[]string{"object: not used by ApplySet, only by Create, CreateIfNotExists, CreateOrUpdate, Apply; remove it or change the operation"}},
		{"ApplySet with kind", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objects": [], "kind": "ConfigMap"}`,
			[]string{"kind: not used by ApplySet, only by"}},
		{"ApplySet objects typo", `{"operation": "ApplySet", "name": "s", ` + parent + `, "objets": []}`,
			[]string{`objets: unknown field: did you mean "objects"?`, `objects: required by ApplySet`}},

		{"Status without status", `{"operation": "Status", "kind": "Widget", "namespace": "ns", "name": "w"}`,
			[]string{"operation 0 (Status Widget ns/w): status: required by Status"}},
		{"Status without kind and name", `{"operation": "Status", "status": {}}`,
			[]string{"kind: required by Status", "name: required by Status"}},
		{"Status status an array", `{"operation": "Status", "kind": "Widget", "name": "w", "status": [1]}`,
			[]string{"status: must be an object (inline, or a string holding it in JSON or YAML), got an array"}},
		{"Status with subresource", `{"operation": "Status", "kind": "Widget", "name": "w", "status": {}, "subresource": "status"}`,
			[]string{"subresource: not used by Status, only by MergePatch, JSONPatch, JQPatch"}},
		{"Status observedGeneration not a boolean", `{"operation": "Status", "kind": "Widget", "name": "w", "status": {}, "observedGeneration": 1}`,
			[]string{"observedGeneration: must be true or false, got number 1"}},
		{"Status observedGeneration typo", `{"operation": "Status", "kind": "Widget", "name": "w", "status": {}, "observedgeneration": true}`,
			[]string{`observedgeneration: unknown field: did you mean "observedGeneration"?`}},
		{"MergePatch with status", `{"operation": "MergePatch", "kind": "Widget", "name": "w", "mergePatch": {}, "status": {}}`,
			[]string{"status: not used by MergePatch, only by Status"}},

		{"Requeue without after and name", `{"operation": "Requeue", "kind": "Widget"}`,
			[]string{"operation 0 (Requeue Widget): after: required by Requeue", "name: required by Requeue"}},
		{"Requeue after zero", `{"operation": "Requeue", "name": "w", "after": "0s"}`, []string{"after: 0s is out of range: it must be more than 0 and at most 24h"}},
		{"Requeue after negative", `{"operation": "Requeue", "name": "w", "after": "-1m"}`, []string{"after: -1m is out of range"}},
		{"Requeue after too long", `{"operation": "Requeue", "name": "w", "after": "24h0m1s"}`, []string{"after: 24h0m1s is out of range"}},
		{"Requeue after not a duration", `{"operation": "Requeue", "name": "w", "after": "soon"}`, []string{`after: "soon" is not a duration: write it like 30s, 5m or 1h30m`}},
		{"Requeue after a number", `{"operation": "Requeue", "name": "w", "after": 30}`, []string{`after: must be a string holding a duration such as "30s", "5m" or "1h30m", got number 30`}},
		{"Requeue apiVersion without kind", `{"operation": "Requeue", "apiVersion": "example.com/v1", "name": "w", "after": "1m"}`,
			[]string{"apiVersion: needs kind: give both, or neither"}},
		{"Requeue empty binding", `{"operation": "Requeue", "name": "w", "after": "1m", "binding": ""}`, []string{"binding: must not be empty"}},
		{"Requeue binding not a string", `{"operation": "Requeue", "name": "w", "after": "1m", "binding": ["a"]}`, []string{"binding: must be a string, got an array"}},
		{"Requeue with force", `{"operation": "Requeue", "name": "w", "after": "1m", "force": true}`, []string{"force: not used by Requeue, only by Apply, ApplySet"}},
		{"Delete with after", `{"operation": "Delete", "kind": "Pod", "name": "p", "after": "1m"}`, []string{"after: not used by Delete, only by Requeue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, msg := parseFails(t, tt.in)
			wantErrorsContaining(t, errs, msg, tt.want)
			for _, e := range errs {
				if e.Index != 0 || e.Field == "" {
					t.Errorf("error %q: index %d, field %q", e, e.Index, e.Field)
				}
			}
		})
	}
}

func TestParseExtensionsReportEveryError(t *testing.T) {
	in := `
- {operation: Requeue, name: a, after: 1m}
- {operation: Apply, object: {kind: ConfigMap, metadata: {name: c, namespace: ns}}, parent: {kind: Database}}
- {operation: Status, kind: Widget, name: w, status: {}, observedGeneration: "true"}
- {operation: ApplySet, name: s, parent: {kind: Namespace, name: n}, objects: [{kind: ConfigMap}]}
- {operation: Requeue, name: a, after: 48h}
`
	errs, _ := parseFails(t, in)
	wantErrorLines(t, errs, []string{
		`operation 1 (Apply ConfigMap ns/c, parent Database): parent.name: required: the parent is given by kind, name, and namespace when namespaced`,
		`operation 2 (Status Widget w): observedGeneration: must be true or false, got string "true"`,
		`operation 3 (ApplySet s of Namespace n): objects[0].metadata.name: required: ApplySet needs the name (server-side apply cannot use metadata.generateName)`,
		`operation 4 (Requeue a): after: 48h is out of range: it must be more than 0 and at most 24h`,
	})
}
