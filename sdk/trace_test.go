package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hookspan"
	"github.com/hook-operator/hook-operator/internal/residenttest"
)

// traced sets a traced run's variables, with a spans file in a temporary
// dir that the hook creates, and returns the file's path.
func traced(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace-spans")
	t.Setenv(EnvTraceParent, residenttest.TraceParent)
	t.Setenv(EnvTraceSpansPath, path)
	return path
}

func hexID(id [8]byte) string { return fmt.Sprintf("%x", id) }

// TestSpansRoundTrip: nested spans, attributes of every type and an error
// status, as the runtime reads them; TraceParent follows the context.
func TestSpansRoundTrip(t *testing.T) {
	path := traced(t)
	before := time.Now()
	ctx, root := StartSpan(context.Background(), "reconcile", String("k8s.namespace", "ns"), Int("count", 3))
	if got := TraceParent(ctx); got != root.TraceParent() || !strings.HasPrefix(got, "00-"+residenttest.Trace+"-") || !strings.HasSuffix(got, "-01") || got == residenttest.TraceParent {
		t.Errorf("TraceParent(ctx) = %q, span's %q", got, root.TraceParent())
	}
	root.SetAttributes(Bool("dry", true), Float("ratio", 0.25), Int("count", 4))
	cctx, child := StartSpan(ctx, "call billing")
	_, grandchild := StartSpan(cctx, "dial")
	grandchild.End(nil)
	child.End(errors.New("billing: 503 Service Unavailable"))
	child.End(nil) // recorded once
	root.End(nil)
	root.SetAttributes(String("late", "x"))

	spans := residenttest.ReadSpans(t, path)
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	r, c, g := spans[0], spans[1], spans[2]
	if r.Name != "reconcile" || c.Name != "call billing" || g.Name != "dial" {
		t.Fatalf("spans in the order %q, %q, %q", r.Name, c.Name, g.Name)
	}
	if hexID(r.ParentSpanID) != residenttest.RunSpan || c.ParentSpanID != r.SpanID || g.ParentSpanID != c.SpanID {
		t.Errorf("parents: %x ← %x ← %x", r.ParentSpanID, c.ParentSpanID, g.ParentSpanID)
	}
	if root.TraceParent() != "00-"+residenttest.Trace+"-"+hexID(r.SpanID)+"-01" {
		t.Errorf("root's traceparent %q, span id %x", root.TraceParent(), r.SpanID)
	}
	want := []hookspan.Attr{{Key: "k8s.namespace", Value: "ns"}, {Key: "count", Value: int64(4)}, {Key: "dry", Value: true}, {Key: "ratio", Value: 0.25}}
	if !reflect.DeepEqual(r.Attributes, want) {
		t.Errorf("attributes %v, want %v", r.Attributes, want)
	}
	if r.StatusCode != hookspan.StatusUnset || c.StatusCode != hookspan.StatusError || c.StatusMessage != "billing: 503 Service Unavailable" {
		t.Errorf("status %d; child's %d %q", r.StatusCode, c.StatusCode, c.StatusMessage)
	}
	for _, s := range spans {
		if s.Kind != hookspan.KindInternal || s.Start.Before(before.Truncate(time.Microsecond)) || s.End.After(time.Now()) || s.End.Before(s.Start) {
			t.Errorf("%s: kind %d, %v to %v", s.Name, s.Kind, s.Start, s.End)
		}
	}
	if !r.End.After(g.End) && !r.End.Equal(g.End) {
		t.Errorf("the root ended at %v, before its grandchild at %v", r.End, g.End)
	}
}

// TestSpansConcurrent: spans ended at once by many goroutines are whole
// lines.
func TestSpansConcurrent(t *testing.T) {
	path := traced(t)
	ctx, root := StartSpan(context.Background(), "batch")
	big := strings.Repeat("x", 1000)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, s := StartSpan(ctx, fmt.Sprint("item ", i), String("payload", big))
			s.SetAttributes(Int("i", i))
			s.End(nil)
		})
	}
	wg.Wait()
	root.End(nil)
	if spans := residenttest.ReadSpans(t, path); len(spans) != 51 {
		t.Errorf("%d spans, want 51", len(spans))
	}
}

// TestSpansKeepWithinTheContract: whatever a hook passes, the line is one
// the runtime accepts: names, keys and values cut, attributes capped,
// odd values written as the contract allows.
func TestSpansKeepWithinTheContract(t *testing.T) {
	path := traced(t)
	var attrs []Attr
	for i := range 70 {
		attrs = append(attrs, Int(fmt.Sprint("a", i), i))
	}
	_, s := StartSpan(context.Background(), strings.Repeat("é", 200), attrs...)
	s.End(errors.New(strings.Repeat("ü", 600)))
	_, s = StartSpan(context.Background(), "",
		String("", "no key"), String(strings.Repeat("k", 200), "long key"), String("long", strings.Repeat("v", 2000)),
		String("bad utf-8", "a\xffb\x00\"\\\n"), Float("nan", math.NaN()), Float("inf", math.Inf(-1)),
		Attr{"max", uint64(math.MaxUint64)}, Attr{"u", uint(7)}, Attr{"i8", int8(-8)}, Attr{"f32", float32(0.5)},
		Attr{"dur", time.Second}, Attr{"err", errors.New("e")}, Attr{"nil", nil}, Attr{"slice", []int{1, 2}})
	s.End(nil)

	spans := residenttest.ReadSpans(t, path)
	a, b := spans[0], spans[1]
	if len(a.Name) != 256 || len(a.Attributes) != 64 || len(a.StatusMessage) != 1024 {
		t.Errorf("name of %d bytes, %d attributes, status message of %d bytes", len(a.Name), len(a.Attributes), len(a.StatusMessage))
	}
	got := map[string]any{}
	for _, at := range b.Attributes {
		got[at.Key] = at.Value
	}
	want := map[string]any{
		strings.Repeat("k", 128): "long key", "long": strings.Repeat("v", 1024), "bad utf-8": "a\uFFFDb\x00\"\\\n",
		"nan": "NaN", "inf": "-Inf", "max": "18446744073709551615", "u": int64(7), "i8": int64(-8), "f32": 0.5,
		"dur": "1s", "err": "e", "nil": "<nil>", "slice": "[1 2]",
	}
	if b.Name != "unnamed" || !reflect.DeepEqual(got, want) {
		t.Errorf("name %q, attributes\n%v\nwant\n%v", b.Name, got, want)
	}
}

// TestSpansFileLimits: past 1,000 spans, or 1 MiB, spans are left out
// rather than take every span of the run with them.
func TestSpansFileLimits(t *testing.T) {
	path := traced(t)
	for range 1001 {
		_, s := StartSpan(context.Background(), "many")
		s.End(nil)
	}
	if spans := residenttest.ReadSpans(t, path); len(spans) != 1000 {
		t.Errorf("%d spans written, want 1000", len(spans))
	}

	path = filepath.Join(t.TempDir(), "full")
	t.Setenv(EnvTraceSpansPath, path)
	if err := os.WriteFile(path, bytes.Repeat([]byte{' '}, hookspan.MaxBytes-100), 0o600); err != nil {
		t.Fatal(err)
	}
	_, s := StartSpan(context.Background(), "too much", String("v", strings.Repeat("v", 200)))
	s.End(nil)
	_, s = StartSpan(context.Background(), "fits")
	s.End(nil)
	if spans := residenttest.ReadSpans(t, path); len(spans) != 0 {
		t.Errorf("%d spans written past 1 MiB", len(spans))
	}
}

// TestSpansOff: without TRACEPARENT or TRACE_SPANS_PATH (tracing off,
// shell-operator) the span is nil and nothing is written; TraceParent
// still passes a valid run's TRACEPARENT on.
func TestSpansOff(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []struct{ parent, path, traceParent string }{
		{"", "", ""},
		{residenttest.TraceParent, "", residenttest.TraceParent},
		{"", filepath.Join(dir, "spans"), ""},
		{"01-" + residenttest.Trace + "-" + residenttest.RunSpan + "-01", filepath.Join(dir, "spans"), ""},
		{"00-" + strings.ToUpper(residenttest.Trace) + "-" + residenttest.RunSpan + "-01", filepath.Join(dir, "spans"), ""},
		{"00-" + strings.Repeat("0", 32) + "-" + residenttest.RunSpan + "-01", filepath.Join(dir, "spans"), ""},
	} {
		t.Setenv(EnvTraceParent, env.parent)
		t.Setenv(EnvTraceSpansPath, env.path)
		ctx := context.Background()
		got, s := StartSpan(ctx, "x", String("k", "v"))
		if got != ctx || s != nil {
			t.Errorf("%+v: StartSpan = %v, %v; want ctx, nil", env, got, s)
		}
		s.SetAttributes(Int("n", 1))
		s.End(errors.New("e"))
		if s.TraceParent() != "" || TraceParent(got) != env.traceParent || TraceParent(nil) != env.traceParent {
			t.Errorf("%+v: TraceParent %q, want %q", env, TraceParent(got), env.traceParent)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written with tracing off: %v", entries)
	}
}

// TestSpanLimitsMatchHookspan: the SDK keeps to the runtime's limits.
func TestSpanLimitsMatchHookspan(t *testing.T) {
	if maxSpans != hookspan.MaxSpans || maxSpansBytes != hookspan.MaxBytes || maxAttributes != hookspan.MaxAttributes ||
		maxNameBytes != hookspan.MaxNameBytes || maxKeyBytes != hookspan.MaxKeyBytes || maxValueBytes != hookspan.MaxStringValueBytes {
		t.Error("the SDK's limits differ from internal/hookspan's")
	}
}

// TestServeSetsTraceEnvironment: a resident run records its spans in its
// own trace and file, and a run whose request carries no trace variables
// records none, even with trace variables in the process's environment
// at start or left by the run before.
func TestServeSetsTraceEnvironment(t *testing.T) {
	t.Setenv(EnvTraceParent, "00-"+strings.Repeat("1", 32)+"-"+strings.Repeat("2", 16)+"-01") // inherited, not the run's
	t.Setenv(EnvTraceState, "inherited=1")
	t.Setenv(EnvTraceSpansPath, filepath.Join(t.TempDir(), "inherited"))
	t.Setenv(EnvBindingContextPath, "")
	dir, contexts := contextsFile(t)
	var seen []string
	handler := func(*Context) error {
		seen = append(seen, os.Getenv(EnvTraceParent)+"|"+os.Getenv(EnvTraceState)+"|"+filepath.Base(os.Getenv(EnvTraceSpansPath)))
		_, s := StartSpan(context.Background(), "run")
		s.End(nil)
		return nil
	}
	request := func(id string, trace ...string) string {
		env := fmt.Sprintf(`"BINDING_CONTEXT_PATH":%q`, contexts)
		for i := 0; i < len(trace); i += 2 {
			env += fmt.Sprintf(`,%q:%q`, trace[i], trace[i+1])
		}
		return `{"id":"` + id + `","env":{` + env + "}}\n"
	}
	requests := request("1") +
		request("2", "TRACEPARENT", residenttest.TraceParent, "TRACESTATE", "a=b&c", "TRACE_SPANS_PATH", filepath.Join(dir, "spans-2")) +
		request("3") +
		request("4", "TRACEPARENT", residenttest.TraceParent, "TRACE_SPANS_PATH", filepath.Join(dir, "spans-4"))
	mustServe(t, handler, requests)
	want := []string{"||.", residenttest.TraceParent + "|a=b&c|spans-2", "||.", residenttest.TraceParent + "||spans-4"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("runs saw\n%q\nwant\n%q", seen, want)
	}
	for _, f := range []string{"spans-2", "spans-4"} {
		if spans := residenttest.ReadSpans(t, filepath.Join(dir, f)); len(spans) != 1 {
			t.Errorf("%s: %d spans, want 1", f, len(spans))
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("files in the runs' dir: %v", entries)
	}
}
