package jq

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var keysCases = []struct {
	src  string
	keys string // comma-separated; "-" when the analysis must refuse
}{
	{`.data`, "data"},
	{`.metadata.labels`, "metadata"},
	{`.metadata.labels["app"]`, "metadata"},
	{`."data"`, "data"},
	{`.["data"]`, "data"},
	{`{name: .metadata.name, data: .data}`, "data,metadata"},
	{`{data, spec}`, "data,spec"},
	{`[.spec.replicas, .status.readyReplicas]`, "spec,status"},
	{`.spec.replicas // 1`, "spec"},
	{`if .status then .status.phase else "none" end`, "status"},
	{`.data | keys`, "data"},
	{`.data | to_entries | map(.key)`, "data"},
	{`.metadata as $m | .spec | {n: $m.name, s: .}`, "metadata,spec"},
	{`select(.kind == "Pod") | .spec`, "kind,spec"},
	{`.spec.containers[].image`, "spec"},
	{`.a[.b]`, "a,b"},
	{`reduce .items[] as $i (0; . + $i)`, "items"},
	{`try .spec.x catch "none"`, "spec"},
	{`"\(.metadata.name)/\(.data.x)"`, "data,metadata"},
	{`.spec.x == 1 and .status.y != null`, "spec,status"},
	{`-.spec.replicas`, "spec"},
	{`$ENV.HOME`, ""},
	{`empty`, ""},
	{`null`, ""},

	{`.`, "-"},
	{`. | .data`, "data"},
	{`keys`, "-"},
	{`to_entries`, "-"},
	{`.[]`, "-"},
	{`..`, "-"},
	{`length`, "-"},
	{`tojson`, "-"},
	{`@base64`, "-"},
	{`has("data")`, "-"},
	{`del(.metadata)`, "-"},
	{`.metadata.name = "x"`, "-"},
	{`{all: .}`, "-"},
	{`[.]`, "-"},
	{`. as $o | $o.data`, "-"},
	{`.[.x]`, "-"},
	{`.[1:2]`, "-"},
	{`def f: .; f`, "-"},
	{`if .x then .y end`, "-"},
	{`select(.x)`, "-"},
	{`. == {}`, "-"},
	{`"\(.)"`, "-"},
	{`getpath(["a"])`, "-"},
	{`paths`, "-"},
	{`(., .x) | .y`, "x,y"}, // .y of the input or of .x: both read y of the restricted input alike
}

func TestTopLevelKeys(t *testing.T) {
	for _, c := range keysCases {
		f, err := Compile(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		keys, ok := f.TopLevelKeys()
		got := strings.Join(keys, ",")
		if !ok {
			got = "-"
		}
		if got != c.keys {
			t.Errorf("%s: keys %q, want %q", c.src, got, c.keys)
		}
	}
}

var keysObjects = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"app":"x"}},"spec":{"replicas":3,"containers":[{"image":"i1"},{"image":"i2"}],"x":1},"status":{"phase":"Running","y":2},"data":{"k":"v","x":"y"},"a":{"q":1},"b":"q","items":[1,2,3]}`,
	`{"kind":"ConfigMap","metadata":{"name":"b"},"data":{}}`,
	`{"kind":"Pod","spec":{"x":1},"status":null}`,
	`{}`,
}

// Wherever the analysis accepts a program, the program's result on an
// object restricted to the keys it names is its result on the whole
// object: errors included.
func TestTopLevelKeysRestrictedInputSameResult(t *testing.T) {
	for _, c := range keysCases {
		checkRestricted(t, c.src)
	}
}

func FuzzTopLevelKeys(f *testing.F) {
	for _, c := range keysCases {
		f.Add(c.src)
	}
	f.Fuzz(func(t *testing.T, src string) { checkRestricted(t, src) })
}

func checkRestricted(t *testing.T, src string) {
	t.Helper()
	f, err := Compile(src)
	if err != nil {
		return
	}
	keys, ok := f.TopLevelKeys()
	if !ok {
		return
	}
	for _, obj := range keysObjects {
		var full map[string]any
		if err := json.Unmarshal([]byte(obj), &full); err != nil {
			t.Fatal(err)
		}
		var restricted map[string]any
		_ = json.Unmarshal([]byte(obj), &restricted)
		for k := range restricted {
			if !slices.Contains(keys, k) {
				delete(restricted, k)
			}
		}
		want, wantErr := f.All(full)
		got, gotErr := f.All(restricted)
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s with keys %v on %s: whole object gives %v (%v), restricted %v (%v)", src, keys, obj, want, wantErr, got, gotErr)
		}
	}
}
