package jq

import (
	"strings"
	"testing"
	"time"
)

func TestResult(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1", "y": "2"}},
		"data":     map[string]any{"k": "v"},
	}
	tests := []struct{ prog, want string }{
		{".data", `{"k":"v"}`},
		{".metadata.labels | keys[]", `["x","y"]`},
		{"empty", `null`},
		{".missing", `null`},
		{".metadata.labels", `{"x":"1","y":"2"}`},
		{"{b: .metadata.labels.y, a: 1}", `{"a":1,"b":"2"}`},
	}
	for _, tt := range tests {
		f, err := Compile(tt.prog)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.ResultJSON(obj)
		if err != nil {
			t.Fatalf("%s: %v", tt.prog, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s = %s, want %s", tt.prog, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := Compile(".a | "); err == nil || !strings.Contains(err.Error(), `".a | "`) {
		t.Errorf("Compile of a broken program: %v", err)
	}
	f, _ := Compile(".a + 1")
	if _, err := f.Result(map[string]any{"a": "s"}); err == nil || !strings.Contains(err.Error(), ".a + 1") {
		t.Errorf("runtime error: %v", err)
	}
}

func TestNormalize(t *testing.T) {
	obj := map[string]any{"a": int64(3), "b": []any{int32(1), map[string]any{"c": float32(0.5)}}}
	Normalize(obj)
	f, _ := Compile(".a + .b[0] + .b[1].c")
	got, err := f.ResultJSON(obj)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "4.5" {
		t.Errorf("got %s", got)
	}
}

func TestEndlessProgramTimesOut(t *testing.T) {
	old := Timeout
	Timeout = 200 * time.Millisecond
	defer func() { Timeout = old }()
	f, err := Compile("repeat(.)")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = f.Result(1)
	if err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("endless program: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v to give up", el)
	}
}
