package ops

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

// opErrors returns the *Error values err joins, failing t on anything else.
func opErrors(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got none")
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []*Error
	for _, e := range list {
		var oe *Error
		if !errors.As(e, &oe) {
			t.Fatalf("error %q is not an *ops.Error", e)
		}
		out = append(out, oe)
	}
	return out
}

// parseFails parses a file that must fail: it returns the *Error values
// the error joins and its whole message, and fails t if Parse returned
// operations too.
func parseFails(t *testing.T, data string) ([]*Error, string) {
	t.Helper()
	ops, err := Parse([]byte(data))
	if ops != nil {
		t.Errorf("got operations along with an error")
	}
	return opErrors(t, err), err.Error()
}

// wantErrorLines fails t unless errs read want, one error a line, in order.
func wantErrorLines(t *testing.T, errs []*Error, want []string) {
	t.Helper()
	got := []string{}
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantErrorsContaining fails t unless errs are as many as want, each
// containing its own line of want; msg is the whole error, for the report.
func wantErrorsContaining(t *testing.T, errs []*Error, msg string, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(errs), len(want), msg)
	}
	for i, e := range errs {
		if i < len(want) && !strings.Contains(e.Error(), want[i]) {
			t.Errorf("error %d:\n got %s\nwant it to contain %s", i, e, want[i])
		}
	}
}

func mustParse(t *testing.T, data string) []Operation {
	t.Helper()
	ops, err := Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return ops
}

// summary renders what Parse made of an operation, for comparing.
func summary(op Operation) string {
	var b strings.Builder
	b.WriteString(op.String())
	if op.Object != nil {
		js, _ := op.Object.MarshalJSON()
		b.WriteString(" object=" + strings.TrimSpace(string(js)))
	}
	if op.MergePatch != nil {
		b.WriteString(" mergePatch=" + string(op.MergePatch))
	}
	if op.JSONPatch != nil {
		b.WriteString(" jsonPatch=" + string(op.JSONPatch))
	}
	if op.JQFilter != nil {
		b.WriteString(" jqFilter=" + op.JQFilter.String())
	}
	if op.IgnoreMissingObject {
		b.WriteString(" ignoreMissingObject")
	}
	if op.Objects != nil {
		js, _ := json.Marshal(op.Objects)
		b.WriteString(" objects=" + string(js))
	}
	if op.Status != nil {
		js, _ := json.Marshal(op.Status)
		b.WriteString(" status=" + string(js))
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{op.Force, "force"}, {op.Owner, "owner"}, {op.ObservedGeneration, "observedGeneration"}} {
		if f.set {
			b.WriteString(" " + f.name)
		}
	}
	return b.String()
}

func TestParseEveryTypeInYAMLAndJSON(t *testing.T) {
	want := []string{
		`Create v1/ConfigMap ns/created object={"apiVersion":"v1","data":{"replicas":"3"},"kind":"ConfigMap","metadata":{"name":"created","namespace":"ns"}}`,
		`CreateIfNotExists v1/ConfigMap ns/maybe object={"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"maybe","namespace":"ns"}}`,
		`CreateOrUpdate Namespace team-a object={"kind":"Namespace","metadata":{"name":"team-a"}}`,
		`Delete ConfigMap ns/old`,
		`DeleteInBackground apps/v1/deploy ns/web`,
		`DeleteNonCascading ns team-b`,
		`MergePatch ConfigMap ns/created mergePatch={"data":{"replicas":"4"}}`,
		`JSONPatch Widget ns/w1, subresource status jsonPatch=[{"op":"replace","path":"/status/phase","value":"Ready"}] ignoreMissingObject`,
		`JQPatch ConfigMap ns/created jqFilter=.data.replicas = "5"`,
		`Apply v1/ConfigMap ns/db-config, parent example.com/v1/Database ns/db object={"apiVersion":"v1","data":{"size":"3"},"kind":"ConfigMap","metadata":{"name":"db-config","namespace":"ns"}} force`,
		`ApplySet workers of Database ns/db objects=[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-password","namespace":"ns"},"stringData":{"password":"x"}}]`,
		`Status example.com/v1/Database ns/db ignoreMissingObject status={"phase":"Ready","replicas":3} observedGeneration`,
		`Requeue Database ns/db after 30s, binding databases`,
	}
	for _, file := range []string{"testdata/all.yaml", "testdata/all.json"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ops := mustParse(t, string(data))
			if len(ops) != len(want) {
				t.Fatalf("got %d operations, want %d", len(ops), len(want))
			}
			for i, op := range ops {
				if op.Index != i {
					t.Errorf("operation %d has Index %d", i, op.Index)
				}
				if got := summary(op); got != want[i] {
					t.Errorf("operation %d:\n got %s\nwant %s", i, got, want[i])
				}
			}
		})
	}
}

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", "  \n\t\n", "---\n", "# nothing to do\n", "---\n---\n", "[]", "null"} {
		ops, err := Parse([]byte(in))
		if err != nil || len(ops) != 0 {
			t.Errorf("Parse(%q) = %d operations, %v; want none and no error", in, len(ops), err)
		}
	}
}

func TestParseJSONStream(t *testing.T) {
	in := `{"operation":"Delete","kind":"Pod","namespace":"a","name":"p1"}{"operation":"Delete","kind":"Pod","namespace":"a","name":"p2"}
[{"operation":"Delete","kind":"Pod","namespace":"a","name":"p3"}, {"operation":"Delete","kind":"Pod","namespace":"a","name":"p4"}]
{"operation":"Delete","kind":"Pod","namespace":"a","name":"p5"}`
	ops := mustParse(t, in)
	if len(ops) != 5 {
		t.Fatalf("got %d operations, want 5", len(ops))
	}
	for i, op := range ops {
		if want := "p" + string(rune('1'+i)); op.Name != want || op.Index != i {
			t.Errorf("operation %d: name %s index %d, want %s %d", i, op.Name, op.Index, want, i)
		}
	}
}

func TestParseYAMLFlowStyle(t *testing.T) {
	// Starts like JSON but is YAML.
	ops := mustParse(t, "{operation: Delete, kind: Pod, namespace: a, name: p1}\n---\n[{operation: Delete, kind: Pod, namespace: a, name: p2}]\n")
	if len(ops) != 2 || ops[0].Name != "p1" || ops[1].Name != "p2" {
		t.Fatalf("got %v", ops)
	}
}

func TestParseStringEncodedFields(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"object as JSON string", `{"operation":"Create","object":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"data\":{\"n\":\"1\"}}"}`,
			`Create v1/ConfigMap n/a object={"apiVersion":"v1","data":{"n":"1"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`},
		{"object as YAML string", "operation: CreateOrUpdate\nobject: |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: n\n",
			`CreateOrUpdate v1/ConfigMap n/a object={"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`},
		{"mergePatch as JSON string", `{"operation":"MergePatch","kind":"cm","namespace":"n","name":"a","mergePatch":"{\"data\":{\"x\":null}}"}`,
			`MergePatch cm n/a mergePatch={"data":{"x":null}}`},
		{"mergePatch as YAML string", "operation: MergePatch\nkind: cm\nnamespace: n\nname: a\nmergePatch: |\n  metadata:\n    labels:\n      app: web\n",
			`MergePatch cm n/a mergePatch={"metadata":{"labels":{"app":"web"}}}`},
		{"jsonPatch as JSON string", `{"operation":"JSONPatch","kind":"cm","namespace":"n","name":"a","jsonPatch":"[{\"op\":\"remove\",\"path\":\"/data/x\"}]"}`,
			`JSONPatch cm n/a jsonPatch=[{"op":"remove","path":"/data/x"}]`},
		{"jsonPatch as YAML string", "operation: JSONPatch\nkind: cm\nnamespace: n\nname: a\njsonPatch: |\n  - op: move\n    from: /data/a\n    path: /data/b\n",
			`JSONPatch cm n/a jsonPatch=[{"from":"/data/a","op":"move","path":"/data/b"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := mustParse(t, tt.in)
			if len(ops) != 1 {
				t.Fatalf("got %d operations", len(ops))
			}
			if got := summary(ops[0]); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseObjectNumbersAreInt64(t *testing.T) {
	ops := mustParse(t, `{"operation":"Create","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"n"},"spec":{"replicas":3,"ratio":0.5}}}`)
	obj := ops[0].Object.DeepCopy() // DeepCopy panics on number types unstructured does not allow
	if v := obj.Object["spec"].(map[string]any)["replicas"]; v != int64(3) {
		t.Errorf("replicas = %#v, want int64(3)", v)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the one error, in order
	}{
		{"no operation", `{"kind":"Pod","name":"a"}`, []string{"operation 0:", "operation: required: one of Create, "}},
		{"operation not a string", `{"operation":3}`, []string{"operation 0:", "operation: must be a string", "number 3"}},
		{"typo in operation", `{"operation":"CreateOrUpdte","object":{}}`, []string{`unknown operation "CreateOrUpdte": did you mean "CreateOrUpdate"?`}},
		{"wrong case in operation", `{"operation":"mergepatch"}`, []string{`unknown operation "mergepatch": did you mean "MergePatch"?`}},
		{"nonsense operation", `{"operation":"Frobnicate"}`, []string{`unknown operation "Frobnicate": use one of Create, CreateIfNotExists`}},
		{"unknown field", `{"operation":"Delete","kind":"Pod","namespace":"a","name":"p","propagation":"x"}`, []string{"operation 0 (Delete Pod a/p): propagation: unknown field: an operation has only the fields operation, apiVersion"}},
		{"typo in field", `{"operation":"Delete","kind":"Pod","namespace":"a","nmae":"p"}`, []string{`nmae: unknown field: did you mean "name"?`, "name: required by Delete"}},
		{"ignoreHookError", `{"operation":"MergePatch","kind":"Pod","namespace":"a","name":"p","mergePatch":{},"ignoreHookError":true}`, []string{"ignoreHookError: not supported"}},
		{"not an object", `"Delete"`, []string{"operation 0: must be an object", `string "Delete"`}},
		{"array element not an object", `[{"operation":"Delete","kind":"Pod","namespace":"a","name":"p"}, 5]`, []string{"operation 1: must be an object", "number 5"}},
		{"JSON syntax", "{\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"p\"}\n{\"operation\": }", []string{"operation 1: not valid JSON (line 2)"}},
		{"JSON truncated", `{"operation":"Delete"`, []string{"operation 0: not valid JSON: the file ends inside a value"}},
		{"YAML syntax", "operation: Delete\nkind: [Pod\n", []string{"operation 0: not valid YAML"}},
		{"YAML documents without a separator", "operation: Delete\nkind: Pod\nname: a\noperation: Delete\nkind: Pod\nname: b\n",
			[]string{"operation 0: not valid YAML", `mapping key "operation" already defined`, "Start every YAML document with ---"}},

		{"Create without object", `{"operation":"Create"}`, []string{"operation 0 (Create): object: required by Create"}},
		{"Create with a target field", `{"operation":"Create","namespace":"a","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"a"}}}`, []string{"namespace: not used by Create: the target comes from object; set object.metadata.namespace instead"}},
		{"Create object not an object", `{"operation":"Create","object":[1]}`, []string{"object: must be an object (inline, or a string holding it in JSON or YAML), got an array"}},
		{"Create object string not YAML", `{"operation":"Create","object":"a: [b"}`, []string{"object: the string is neither JSON nor YAML"}},
		{"Create object string scalar", `{"operation":"Create","object":"hello"}`, []string{`object: the string holds string "hello", but it must hold an object`}},
		{"Create object without kind", `{"operation":"Create","object":{"apiVersion":"v1","metadata":{"name":"c"}}}`, []string{"object.kind: required"}},
		{"Create object without name", `{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}}`, []string{"object.metadata.name: required (or object.metadata.generateName)"}},
		{"CreateOrUpdate with generateName", `{"operation":"CreateOrUpdate","object":{"kind":"ConfigMap","metadata":{"generateName":"c-"}}}`, []string{"object.metadata.name: required: CreateOrUpdate needs the name"}},
		{"CreateIfNotExists name not a string", `{"operation":"CreateIfNotExists","object":{"kind":"ConfigMap","metadata":{"name":5}}}`, []string{"object.metadata.name: must be a string, got number 5"}},
		{"Create metadata not an object", `{"operation":"Create","object":{"kind":"ConfigMap","metadata":"x"}}`, []string{`object.metadata: must be an object, got string "x"`}},
		{"Create bad apiVersion", `{"operation":"Create","object":{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"x"}}}`, []string{`object.apiVersion: "a/b/c" is not an apiVersion`}},

		{"Delete without kind and name", `{"operation":"Delete"}`, []string{"kind: required by Delete", "name: required by Delete"}},
		{"Delete with empty name", `{"operation":"DeleteInBackground","kind":"Pod","name":""}`, []string{"name: must not be empty"}},
		{"Delete with subresource", `{"operation":"DeleteNonCascading","kind":"Pod","name":"p","subresource":"status"}`, []string{"subresource: not used by DeleteNonCascading, only by MergePatch, JSONPatch, JQPatch"}},
		{"Delete with object", `{"operation":"Delete","kind":"Pod","name":"p","object":{}}`, []string{"object: not used by Delete, only by Create, CreateIfNotExists, CreateOrUpdate"}},
		{"Delete with ignoreMissingObject", `{"operation":"Delete","kind":"Pod","name":"p","ignoreMissingObject":true}`, []string{"ignoreMissingObject: not used by Delete"}},
		{"name with a slash", `{"operation":"Delete","kind":"Pod","name":"ns/p"}`, []string{`name: "ns/p" is not an object name`}},
		{"bad namespace", `{"operation":"Delete","kind":"Pod","namespace":"My_NS","name":"p"}`, []string{`namespace: "My_NS" is not a namespace name`}},
		{"kind not a string", `{"operation":"Delete","kind":["Pod"],"name":"p"}`, []string{"kind: must be a string, got an array"}},

		{"MergePatch without patch", `{"operation":"MergePatch","kind":"Pod","name":"p"}`, []string{"mergePatch: required by MergePatch"}},
		{"MergePatch with an array", `{"operation":"MergePatch","kind":"Pod","name":"p","mergePatch":[]}`, []string{"mergePatch: must be an object", "got an array"}},
		{"MergePatch with jsonPatch", `{"operation":"MergePatch","kind":"Pod","name":"p","mergePatch":{},"jsonPatch":[]}`, []string{"jsonPatch: not used by MergePatch, only by JSONPatch"}},
		{"MergePatch empty string", `{"operation":"MergePatch","kind":"Pod","name":"p","mergePatch":""}`, []string{"mergePatch: is an empty string"}},
		{"ignoreMissingObject a string", `{"operation":"MergePatch","kind":"Pod","name":"p","mergePatch":{},"ignoreMissingObject":"yes"}`, []string{`ignoreMissingObject: must be true or false, got string "yes"`}},
		{"bad subresource", `{"operation":"MergePatch","kind":"Pod","name":"p","mergePatch":{},"subresource":"Status/x"}`, []string{`subresource: "Status/x" is not a subresource name`}},

		{"JSONPatch with an object", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":{"op":"add"}}`, []string{"jsonPatch: must be an array", "got an object"}},
		{"JSONPatch unknown op", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":[{"op":"set","path":"/a","value":1}]}`, []string{`jsonPatch[0]: "op" "set" is not a JSON patch op`}},
		{"JSONPatch add without value", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":[{"op":"remove","path":"/a"},{"op":"add","path":"/a"}]}`, []string{`jsonPatch[1]: "value" is required by op "add"`}},
		{"JSONPatch bad path", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":[{"op":"remove","path":"a.b"}]}`, []string{`jsonPatch[0]: "path" "a.b" is not a JSON pointer`}},
		{"JSONPatch move without from", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":[{"op":"move","path":"/a"}]}`, []string{`jsonPatch[0]: "from" is required`}},
		{"JSONPatch element not an object", `{"operation":"JSONPatch","kind":"Pod","name":"p","jsonPatch":["add"]}`, []string{`jsonPatch[0]: must be an object like`}},

		{"JQPatch bad program", `{"operation":"JQPatch","kind":"Pod","name":"p","jqFilter":".a = "}`, []string{"operation 0 (JQPatch Pod p): jqFilter: jq program"}},
		{"JQPatch empty program", `{"operation":"JQPatch","kind":"Pod","name":"p","jqFilter":"  "}`, []string{"jqFilter: must not be empty"}},
		{"JQPatch program not a string", `{"operation":"JQPatch","kind":"Pod","name":"p","jqFilter":{}}`, []string{"jqFilter: must be a string, got an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, msg := parseFails(t, tt.in)
			if len(errs) != 1 && len(tt.want) == 1 {
				t.Errorf("got %d errors, want 1:\n%s", len(errs), msg)
			}
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error does not contain %q (in order):\n%s", w, msg)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	in := `operation: Delete
kind: ConfigMap
namespace: ns
name: fine
---
operation: Craete
object: {}
---
operation: MergePatch
kind: ConfigMap
name: x
mergePatch: [1]
jqFilter: .
---
- operation: Delete
  kind: Pod
  name: fine-too
- operation: JSONPatch
  kind: Pod
  jsonPatch:
  - {op: add, path: /a}
`
	errs, _ := parseFails(t, in)
	wantErrorLines(t, errs, []string{
		`operation 1: operation: unknown operation "Craete": did you mean "Create"?`,
		`operation 2 (MergePatch ConfigMap x): jqFilter: not used by MergePatch, only by JQPatch; remove it or change the operation`,
		`operation 2 (MergePatch ConfigMap x): mergePatch: must be an object (inline, or a string holding it in JSON or YAML), got an array`,
		`operation 4 (JSONPatch Pod): jsonPatch[0]: "value" is required by op "add"`,
		`operation 4 (JSONPatch Pod): name: required by JSONPatch`,
	})
}

func TestParseYAMLStringsStayStrings(t *testing.T) {
	// YAML 1.1 would read n, no and on as booleans.
	ops := mustParse(t, "operation: MergePatch\nkind: ConfigMap\nnamespace: n\nname: no\nmergePatch:\n  data:\n    enabled: on\n")
	if ops[0].Namespace != "n" || ops[0].Name != "no" || string(ops[0].MergePatch) != `{"data":{"enabled":"on"}}` {
		t.Errorf("got %s", summary(ops[0]))
	}
}

func TestParseNullMeansAbsent(t *testing.T) {
	ops := mustParse(t, "operation: Delete\nkind: ConfigMap\nnamespace: n\nname: a\napiVersion:\n")
	if ops[0].APIVersion != "" {
		t.Errorf("apiVersion = %q", ops[0].APIVersion)
	}
}

func TestParseSubresourceSlash(t *testing.T) {
	ops := mustParse(t, `{"operation":"MergePatch","kind":"Widget","namespace":"n","name":"a","subresource":"/status","mergePatch":{"status":{}}}`)
	if ops[0].Subresource != "status" {
		t.Errorf("subresource = %q, want status", ops[0].Subresource)
	}
}

func TestParseGenerateName(t *testing.T) {
	ops := mustParse(t, `{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"job-","namespace":"n"}}}`)
	if got := ops[0].String(); got != "Create v1/ConfigMap n/job-*" {
		t.Errorf("String() = %q", got)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Craete", `did you mean "Create"?`},
		{"createorupdate", `did you mean "CreateOrUpdate"?`},
		{"CreateIfNotExist", `did you mean "CreateIfNotExists"?`},
		{"DeleteInBackgroud", `did you mean "DeleteInBackground"?`},
		{"JsonPatch", `did you mean "JSONPatch"?`},
		{"Patch", `did you mean "MergePatch", "JSONPatch" or "JQPatch"?`},
		{"update", `did you mean "CreateOrUpdate"?`},
		{"Applyset", `did you mean "ApplySet"?`},
		{"apply", `did you mean "Apply" or "ApplySet"?`},
		{"Stauts", `did you mean "Status"?`},
		{"Requeu", `did you mean "Requeue"?`},
		{"Frobnicate", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := spelling.DidYouMean(tt.in, Types); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		i, n int
		want string
	}{
		{0, 1, ""},
		{0, 2, " (the operation after it was not applied)"},
		{0, 3, " (the 2 operations after it were not applied)"},
		{1, 2, " (the operation before it was applied)"},
		{2, 3, " (the 2 operations before it were applied)"},
		{1, 3, " (the operation before it was applied, the operation after it was not)"},
		{2, 5, " (the 2 operations before it were applied, the 2 operations after it were not)"},
	}
	for _, tt := range tests {
		if got := progress(tt.i, tt.n); got != tt.want {
			t.Errorf("progress(%d, %d) = %q, want %q", tt.i, tt.n, got, tt.want)
		}
	}
}

// Any operations file: Parse does not panic, gives the same answer twice,
// every error names an operation (its index), and the operations of a file
// that parses have a known type.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}}`,
		"operation: Delete\nkind: Pod\nnamespace: app\nname: a\n---\noperation: MergePatch\nkind: Pod\nnamespace: app\nname: b\nmergePatch: {metadata: {labels: {x: y}}}\n",
		`[{"operation":"JQPatch","kind":"ConfigMap","namespace":"n","name":"a","jqFilter":".data.x = \"1\""},{"operation":"JSONPatch","kind":"ConfigMap","namespace":"n","name":"a","jsonPatch":[{"op":"add","path":"/data/y","value":"2"}]}]`,
		`{"operation":"CreateOrUpdate","object":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s\"}}"}`,
		`{"operation":"Frobnicate"}`, `{"operation":"MergePatch","kind":"ConfigMap"}`, "---\n---\n", "[", "# only a comment\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops1, err1 := Parse(data)
		_, err2 := Parse(data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two parses differ:\n%v\n%v", err1, err2)
		}
		if err1 != nil {
			if !strings.Contains(err1.Error(), "operation") {
				t.Fatalf("error names no operation: %v", err1)
			}
			return
		}
		for i, op := range ops1 {
			if !slices.Contains(Types, op.Type) {
				t.Fatalf("operation %d has type %q, not one of %v", i, op.Type, Types)
			}
		}
	})
}
