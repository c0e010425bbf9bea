package ops

import (
	"slices"
	"strings"
	"testing"
)

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
