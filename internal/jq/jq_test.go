package jq

import (
	"context"
	"errors"
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

// A short run makes no timer: its context's Done stays nil (never ready)
// until armAfter steps, and Err nil.
func TestRunContextArmsOnlyLongRuns(t *testing.T) {
	old := Timeout
	Timeout = 50 * time.Millisecond
	defer func() { Timeout = old }()
	c := newRunContext()
	defer c.stop()
	for i := 1; i < armAfter; i++ {
		if c.Done() != nil || c.Err() != nil {
			t.Fatalf("step %d: Done %v, Err %v; want no timer yet", i, c.Done(), c.Err())
		}
	}
	done := c.Done()
	if done == nil {
		t.Fatalf("step %d: Done still nil; want the deadline's channel", armAfter)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed 10 s after a 50 ms deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v, want context.DeadlineExceeded", c.Err())
	}
	if d, ok := c.Deadline(); !ok || !d.Equal(c.start.Add(Timeout)) {
		t.Errorf("Deadline = %v, %v; want start + Timeout", d, ok)
	}
}

// A filter's run on an object allocates no timeout context, timer and
// channel (a watch runs one per object and binding).
func TestShortRunAllocations(t *testing.T) {
	f, err := Compile(".data")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"data": map[string]any{"name": "x"}, "metadata": map[string]any{"name": "x"}}
	got := testing.AllocsPerRun(100, func() { _, _ = f.All(obj) })
	// 8 here: gojq's state, the outputs, and the run's context. With a
	// context.WithTimeout per run it was 12 (its context, timer, channel
	// and cancel function).
	if got > 9 {
		t.Errorf("one run of .data made %.0f allocations, want at most 9", got)
	}
}
