package lib_test

// Tests of the Python helper's traces: the spans span() writes must parse
// with the runtime's own parser (internal/hookspan), as the bash helper's.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hookspan"
)

// TestPythonSpan: spans nest, carry attributes of every type, and an
// exception or a die in the block marks its span failed and goes on;
// traceparent() and traced_headers() follow the innermost span.
func TestPythonSpan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace-spans")
	r, _ := runPython(t, `[]`, fmt.Sprintf(`
os.environ.update(TRACEPARENT=%q, TRACESTATE="v=1", TRACE_SPANS_PATH=%q)
def handle():
    print("run:", hook.traceparent())
    with hook.span("outer", ticket="ns/t1", count=3, ratio=0.5, dry=True, big=1 << 70, nan=float("nan"), obj=[1]) as outer:
        outer.set_attributes(count=4, **{"http.status_code": 200})
        print("outer:", hook.traceparent() == outer.traceparent, json.dumps(hook.traced_headers({"Accept": "x"}), sort_keys=True))
        try:
            with hook.span("raises"):
                raise ValueError("bad ticket")
        except ValueError as e:
            print("caught:", e)
        try:
            with hook.span("dies"):
                hook.die("told to die")
        except SystemExit as e:
            print("exit:", e.code)
        with hook.span("é" * 200, **{"k" * 200: "v" * 2000}):
            pass
    print("after:", hook.traceparent())
hook.run(handle)
`, testTraceParent, path))
	if r.err != nil {
		t.Fatalf("%v\nstderr:\n%s", r.err, r.stderr)
	}
	spans := readSpans(t, path)
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	outer, raises, dies, long := spans[0], spans[1], spans[2], spans[3]
	if spanID(outer.ParentSpanID) != testRunSpan || raises.ParentSpanID != outer.SpanID || dies.ParentSpanID != outer.SpanID || long.ParentSpanID != outer.SpanID {
		t.Errorf("parents: %x, %x, %x, %x; outer %x", outer.ParentSpanID, raises.ParentSpanID, dies.ParentSpanID, long.ParentSpanID, outer.SpanID)
	}
	want := []hookspan.Attr{{Key: "ticket", Value: "ns/t1"}, {Key: "count", Value: int64(4)}, {Key: "ratio", Value: 0.5}, {Key: "dry", Value: true},
		{Key: "big", Value: "1180591620717411303424"}, {Key: "nan", Value: "nan"}, {Key: "obj", Value: "[1]"}, {Key: "http.status_code", Value: int64(200)}}
	if outer.Name != "outer" || !reflect.DeepEqual(outer.Attributes, want) || outer.StatusCode != hookspan.StatusUnset {
		t.Errorf("outer: %q, %v, status %d", outer.Name, outer.Attributes, outer.StatusCode)
	}
	if raises.StatusCode != hookspan.StatusError || raises.StatusMessage != "ValueError: bad ticket" || dies.StatusMessage != "exit 1" {
		t.Errorf("statuses %d %q, %q", raises.StatusCode, raises.StatusMessage, dies.StatusMessage)
	}
	if len(long.Name) != 256 || len(long.Attributes[0].Key) != 128 || len(long.Attributes[0].Value.(string)) != 1024 {
		t.Errorf("long: name of %d bytes, %v", len(long.Name), long.Attributes)
	}
	headers := fmt.Sprintf(`{"Accept": "x", "traceparent": "00-%s-%s-01", "tracestate": "v=1"}`, testTrace, spanID(outer.SpanID))
	if want := "run: " + testTraceParent + "\nouter: True " + headers + "\ncaught: bad ticket\nexit: 1\nafter: " + testTraceParent + "\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
}

// TestPythonSpanOff: with tracing off span() records nothing and changes
// nothing, and traced_headers() returns a copy.
func TestPythonSpanOff(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []string{
		`os.environ.pop("TRACEPARENT", None); os.environ.pop("TRACE_SPANS_PATH", None)`,
		fmt.Sprintf(`os.environ["TRACEPARENT"] = %q; os.environ.pop("TRACE_SPANS_PATH", None)`, testTraceParent),
		fmt.Sprintf(`os.environ["TRACEPARENT"] = "00-x"; os.environ["TRACE_SPANS_PATH"] = %q`, dir+"/spans"),
	} {
		r, _ := runPython(t, `[]`, env+`
def handle():
    h = {"Accept": "x"}
    with hook.span("s", k="v") as s:
        s.set_attributes(n=1)
        print(repr(s.traceparent), repr(hook.traceparent()), hook.traced_headers(h) == dict(h, **({"traceparent": hook.traceparent()} if hook.traceparent() else {})), h)
    try:
        with hook.span("raises"):
            raise ValueError("x")
    except ValueError:
        print("raised")
hook.run(handle)
`)
		tp := ""
		if strings.Contains(env, testTraceParent) {
			tp = testTraceParent
		}
		if want := fmt.Sprintf("'' '%s' True {'Accept': 'x'}\nraised\n", tp); r.err != nil || r.stdout != want {
			t.Errorf("%s: %v\nstdout %q, want %q\nstderr:\n%s", env, r.err, r.stdout, want, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written with tracing off: %v", entries)
	}
}

// TestPythonResidentTrace: each resident run has the trace variables of
// its request and none when its request has none, not even those the
// process started with; spans go to the run's file.
func TestPythonResidentTrace(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	inherited := filepath.Join(t.TempDir(), "inherited")
	p := startResident(t, exec.Command(writePythonHook(t, `
def handle():
    with open(os.environ["SEEN"], "a") as f:
        f.write("%s|%s|%s\n" % (os.environ.get("TRACEPARENT", ""), os.environ.get("TRACESTATE", ""), os.path.basename(os.environ.get("TRACE_SPANS_PATH", ""))))
    with hook.span("run"):
        pass
hook.run(handle)
`)), "SEEN="+seen, "TRACEPARENT=00-"+strings.Repeat("1", 32)+"-"+strings.Repeat("2", 16)+"-01", "TRACESTATE=inherited=1", "TRACE_SPANS_PATH="+inherited)
	dir := t.TempDir()
	requests := request(t, "1", "") +
		request(t, "2", `,"TRACEPARENT":"`+testTraceParent+`","TRACESTATE":"v=a\u0026b","TRACE_SPANS_PATH":"`+dir+`/spans-2"`) +
		request(t, "3", "")
	p.serve(t, requests)
	data, _ := os.ReadFile(seen)
	if want := "||\n" + testTraceParent + "|v=a&b|spans-2\n||\n"; string(data) != want {
		t.Errorf("runs saw\n%s\nwant\n%s\nlog:\n%s", data, want, p.log)
	}
	if spans := readSpans(t, filepath.Join(dir, "spans-2")); len(spans) != 1 {
		t.Errorf("run 2 recorded %d spans", len(spans))
	}
	if _, err := os.Stat(inherited); !os.IsNotExist(err) {
		t.Errorf("a run recorded spans in the trace the process started with: %v", err)
	}
}
