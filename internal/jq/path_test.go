package jq

import (
	"bytes"
	"testing"

	"github.com/hook-operator/hook-operator/internal/jsonenc"
)

// A program that is a plain path of fields gives, without running, the
// bytes the program gives when run, or fails as it does, for every kind
// of input; any other program runs.
func TestPathResultIsTheProgramsResult(t *testing.T) {
	paths := map[string]bool{
		".": true, ".data": true, " .data ": true, ".metadata.labels": true, ".a.b.c": true, `.["data"]`: false,
		".data?": false, ".[0]": false, ".a | .b": false, "..": false, ".a,.b": false, "{a: .a}": false, ".a[]": false,
	}
	inputs := []any{
		nil, "text", 1.5, true, []any{1, 2},
		map[string]any{},
		map[string]any{"data": map[string]any{"k": "v", "b": []any{1, "x"}}, "metadata": map[string]any{"labels": map[string]any{"app": "x"}}},
		map[string]any{"data": "not an object", "metadata": nil, "a": map[string]any{"b": map[string]any{"c": 3}}},
		map[string]any{"a": map[string]any{"b": []any{"no fields"}}},
	}
	for src, want := range paths {
		f, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if isPath := f.path != nil; isPath != want {
			t.Errorf("%q: taken as a path of fields %v, want %v", src, isPath, want)
		}
		for _, in := range inputs {
			got, gotErr := f.ResultJSON(in)
			v, runErr := f.Result(in)
			var ran []byte
			if runErr == nil {
				ran, runErr = jsonenc.Marshal(v)
			}
			if (gotErr != nil) != (runErr != nil) || !bytes.Equal(got, ran) {
				t.Errorf("%q on %v: %s (%v); running it gives %s (%v)", src, in, got, gotErr, ran, runErr)
			}
			if gotErr != nil && runErr != nil && gotErr.Error() != runErr.Error() {
				t.Errorf("%q on %v fails with %q; running it fails with %q", src, in, gotErr, runErr)
			}
		}
	}
}

func BenchmarkResultJSONPath(b *testing.B) {
	f, err := Compile(".data")
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": map[string]any{"key": "value", "other": "value"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ResultJSON(in); err != nil {
			b.Fatal(err)
		}
	}
}
