package lib_test

// Tests of the trace helpers, hooks/lib/trace.sh and the Python helper's
// span(): the spans they write must parse with the runtime's own parser
// (internal/hookspan).

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hookspan"
	"github.com/hook-operator/hook-operator/internal/residenttest"
)

// tracing returns the lines a script starts with to be a traced run, and
// the path of its spans file.
func tracing(t *testing.T) (prelude, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "trace-spans")
	return fmt.Sprintf("export TRACEPARENT=%s TRACE_SPANS_PATH=%s\n", residenttest.TraceParent, path), path
}

// byName indexes spans by name.
func byName(spans []hookspan.Span) map[string]hookspan.Span {
	m := map[string]hookspan.Span{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

func spanID(id [8]byte) string { return hex.EncodeToString(id[:]) }

// fakeCurl puts a curl on PATH that prints its arguments, one a line, and
// returns the line that puts it there.
func fakeCurl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "curl"), []byte("#!/bin/sh\nprintf 'arg:%s\\n' \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return "export PATH=" + dir + ":$PATH\n"
}

// TestSpanBash: spans nest (through functions and a program that sources
// hook.sh), carry their attributes, and a failed command marks its span
// failed and returns its status; hook::traceparent and hook::curl follow
// the innermost span.
func TestSpanBash(t *testing.T) {
	prelude, path := tracing(t)
	lib, _ := filepath.Abs("hook.sh")
	child := filepath.Join(t.TempDir(), "child.sh")
	if err := os.WriteFile(child, []byte("#!/usr/bin/env bash\nset -euo pipefail\nsource "+lib+"\nhook::span child-process -- hook::traceparent\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, `[]`, fakeCurl(t)+prelude+`
echo "run: $(hook::traceparent)"
inner() {
  echo "inner: $(hook::traceparent)"
  hook::span "call" -- hook::curl -fsS https://billing.example/
  hook::span "fails" -- false || echo "fails returned $?"
  `+child+`
}
hook::span "outer" ticket="ns/t1" note="a=b c" -- inner
hook::span "exits 3" -- bash -c 'exit 3' || echo "exits 3 returned $?"
out=$(hook::span "captured" -- echo "from the span")
echo "captured: $out"
`)
	spans := residenttest.ReadSpans(t, path)
	s := byName(spans)
	if len(spans) != 6 || len(s) != 6 {
		t.Fatalf("spans %v\nstdout:\n%s", s, r.stdout)
	}
	outer := s["outer"]
	if spanID(outer.ParentSpanID) != residenttest.RunSpan {
		t.Errorf("outer's parent %x, want the run's", outer.ParentSpanID)
	}
	for _, name := range []string{"call", "fails", "child-process"} {
		if s[name].ParentSpanID != outer.SpanID {
			t.Errorf("%s: parent %x, want outer %x", name, s[name].ParentSpanID, outer.SpanID)
		}
	}
	for _, name := range []string{"exits 3", "captured"} {
		if spanID(s[name].ParentSpanID) != residenttest.RunSpan {
			t.Errorf("%s: parent %x, want the run's", name, s[name].ParentSpanID)
		}
	}
	if want := []hookspan.Attr{{Key: "ticket", Value: "ns/t1"}, {Key: "note", Value: "a=b c"}}; !reflect.DeepEqual(outer.Attributes, want) {
		t.Errorf("outer's attributes %v, want %v", outer.Attributes, want)
	}
	for name, msg := range map[string]string{"fails": "exit 1", "exits 3": "exit 3"} {
		if s[name].StatusCode != hookspan.StatusError || s[name].StatusMessage != msg {
			t.Errorf("%s: status %d %q, want error %q", name, s[name].StatusCode, s[name].StatusMessage, msg)
		}
	}
	for _, name := range []string{"outer", "call", "captured"} {
		if s[name].StatusCode != hookspan.StatusUnset || s[name].Kind != hookspan.KindInternal {
			t.Errorf("%s: status %d, kind %d", name, s[name].StatusCode, s[name].Kind)
		}
	}
	outerTP := "00-" + residenttest.Trace + "-" + spanID(outer.SpanID) + "-01"
	callTP := "00-" + residenttest.Trace + "-" + spanID(s["call"].SpanID) + "-01"
	childTP := "00-" + residenttest.Trace + "-" + spanID(s["child-process"].SpanID) + "-01"
	want := "run: " + residenttest.TraceParent + "\ninner: " + outerTP + "\narg:-H\narg:traceparent: " + callTP + "\narg:-fsS\narg:https://billing.example/\n" +
		"fails returned 1\n" + childTP + "\nexits 3 returned 3\ncaptured: from the span\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if s["outer"].End.Before(s["child-process"].End) || s["call"].Start.Before(s["outer"].Start) {
		t.Errorf("times: outer %v–%v, call from %v, child process to %v", s["outer"].Start, s["outer"].End, s["call"].Start, s["child-process"].End)
	}
}

// TestSpanBashSetE: under set -e a failing command in a hook::span
// function stops there, as it would without hook::span, the span records
// the failure, and the hook exits with the status.
func TestSpanBashSetE(t *testing.T) {
	prelude, path := tracing(t)
	script := prelude + `
work() { false; echo "not reached"; }
hook::span "work" -- work
echo "after"
`
	r := runScript(t, `[]`, script)
	if exitCode(r.err) != 1 || strings.Contains(r.stdout, "not reached") || strings.Contains(r.stdout, "after") {
		t.Errorf("exit %v, stdout %q", r.err, r.stdout)
	}
	if s := residenttest.ReadSpans(t, path); len(s) != 1 || s[0].StatusMessage != "exit 1" {
		t.Errorf("spans %+v", s)
	}

	// Off, the same: set -e and the subshell do not depend on tracing.
	r = runScript(t, `[]`, "unset TRACEPARENT TRACE_SPANS_PATH\n"+script+"x=1\n")
	if exitCode(r.err) != 1 || strings.Contains(r.stdout, "not reached") || strings.Contains(r.stdout, "after") {
		t.Errorf("tracing off: exit %v, stdout %q", r.err, r.stdout)
	}
}

// TestSpanBashOff: without TRACEPARENT or TRACE_SPANS_PATH (tracing off,
// shell-operator) hook::span only runs its command, in a subshell as
// always, and writes nothing; hook::curl adds no header.
func TestSpanBashOff(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []string{
		"unset TRACEPARENT TRACE_SPANS_PATH",
		"export TRACEPARENT=" + residenttest.TraceParent + "; unset TRACE_SPANS_PATH",
		"unset TRACEPARENT; export TRACE_SPANS_PATH=" + dir + "/spans",
		"export TRACEPARENT=not-one TRACE_SPANS_PATH=" + dir + "/spans",
	} {
		r := mustRun(t, `[]`, fakeCurl(t)+env+`
x=before
hook::span "s" k=v -- eval 'x=inside; echo "ran: $x"'
hook::span "f" -- false || echo "returned $?"
echo "x=$x span=${HOOK_SPAN_TRACEPARENT:-} traceparent=$(hook::traceparent)"
hook::curl https://example/
`)
		tp := ""
		if strings.Contains(env, "export TRACEPARENT="+residenttest.TraceParent) {
			tp = residenttest.TraceParent
		}
		want := "ran: inside\nreturned 1\nx=before span= traceparent=" + tp + "\n"
		if tp != "" {
			want += "arg:-H\narg:traceparent: " + tp + "\n"
		}
		want += "arg:https://example/\n"
		if r.stdout != want {
			t.Errorf("%s:\nstdout:\n%s\nwant:\n%s", env, r.stdout, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written with tracing off: %v", entries)
	}
}

// TestCurlBashTraceState: with $TRACESTATE, hook::curl sends it too.
func TestCurlBashTraceState(t *testing.T) {
	prelude, _ := tracing(t)
	r := mustRun(t, `[]`, fakeCurl(t)+prelude+`export TRACESTATE='vendor=a&b'
hook::curl -s https://example/`)
	if want := "arg:-H\narg:traceparent: " + residenttest.TraceParent + "\narg:-H\narg:tracestate: vendor=a&b\narg:-s\narg:https://example/\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
}

// TestSpanBashLimits: names, keys and values are cut to the contract's
// limits at a character; with 1,000 spans in the file no more is added;
// the time comes from date where bash has no EPOCHREALTIME.
func TestSpanBashLimits(t *testing.T) {
	prelude, path := tracing(t)
	mustRun(t, `[]`, prelude+`
long=$(printf 'é%.0s' {1..700})
hook::span "$long" "$long=$long" "k=" -- true
unset EPOCHREALTIME
hook::span "by date" -- sleep 0.01
`)
	spans := residenttest.ReadSpans(t, path)
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if len(s.Name) != 256 || len(s.Attributes) != 2 || len(s.Attributes[0].Key) != 128 || len(s.Attributes[0].Value.(string)) != 1024 || s.Attributes[1].Value != "" {
		t.Errorf("name of %d bytes, attributes %d: %v", len(s.Name), len(s.Attributes), s.Attributes[1:])
	}
	if d := spans[1].End.Sub(spans[1].Start); d < 10e6 || d > 10e9 {
		t.Errorf("span timed with date lasted %v", d)
	}

	var lines strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&lines, `{"traceId":%q,"spanId":"%016x","parentSpanId":%q,"name":"n","startTimeUnixNano":1,"endTimeUnixNano":1}`+"\n", residenttest.Trace, i+1, residenttest.RunSpan)
	}
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, `[]`, prelude+`hook::span "one too many" -- true`)
	if spans := residenttest.ReadSpans(t, path); len(spans) != 1000 {
		t.Errorf("%d spans", len(spans))
	}
}

// TestSpanBashUsage: a wrong call says how to call, runs nothing and
// returns 2.
func TestSpanBashUsage(t *testing.T) {
	for _, args := range []string{``, `name`, `name -- `, `"" -- true`, `-- true`, `name k=v true`, `name novalue -- true`, `name =v -- true`,
		`name $(printf 'k=v %.0s' {1..65}) -- true`} {
		r := runScript(t, `[]`, `hook::span `+args+` || echo "returned $?"`)
		if r.stdout != "returned 2\n" || !strings.Contains(r.stderr, "hook::span: ") {
			t.Errorf("hook::span %s: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
}

// TestResidentBashTrace: each resident run has the trace variables of its
// request, decoded when escaped, and none when its request has none, not
// even those the process started with.
func TestResidentBashTrace(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	cmd := exec.Command(writeResidentHook(t, `
handle() {
  printf '%s|%s|%s|%s\n' "${TRACEPARENT:-}" "${TRACESTATE:-}" "$(basename "${TRACE_SPANS_PATH:-}")" "${HOOK_SPAN_TRACEPARENT:-}" >>"$SEEN"
  hook::span "run" -- true
}
hook::resident handle
`))
	p, dir := serveTracedRun(t, cmd, `v=a\u0026b\"c\\d`, "SEEN="+seen, "HOOK_SPAN_TRACEPARENT=00-"+strings.Repeat("1", 32)+"-"+strings.Repeat("3", 16)+"-01")
	data, _ := os.ReadFile(seen)
	if want := "|||\n" + residenttest.TraceParent + `|v=a&b"c\d|spans-2|` + "\n|||\n"; string(data) != want {
		t.Errorf("runs saw\n%s\nwant\n%s\nlog:\n%s", data, want, p.log)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files in the runs' dir: %v", entries)
	}
}

// serveTracedRun starts cmd as a resident hook whose environment holds a
// trace of its own, and env, and serves it three runs of which only the
// second carries trace variables: the test's TRACEPARENT, tracestate (as
// the request's JSON writes it) and the spans file spans-2 in a fresh
// dir. It fails t unless run 2 recorded one span there and no run
// recorded any in the process's own trace; it returns the process and
// the dir.
func serveTracedRun(t *testing.T, cmd *exec.Cmd, tracestate string, env ...string) (*residentProcess, string) {
	t.Helper()
	inherited := filepath.Join(t.TempDir(), "inherited")
	p := startResident(t, cmd, append([]string{"TRACEPARENT=00-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01",
		"TRACESTATE=inherited=1", "TRACE_SPANS_PATH=" + inherited}, env...)...)
	dir := t.TempDir()
	requests := request(t, "1", "") +
		request(t, "2", `,"TRACEPARENT":"`+residenttest.TraceParent+`","TRACESTATE":"`+tracestate+`","TRACE_SPANS_PATH":"`+dir+`/spans-2"`) +
		request(t, "3", "")
	p.serve(t, requests)
	if spans := residenttest.ReadSpans(t, filepath.Join(dir, "spans-2")); len(spans) != 1 {
		t.Errorf("run 2 recorded %d spans", len(spans))
	}
	if _, err := os.Stat(inherited); !os.IsNotExist(err) {
		t.Errorf("a run recorded spans in the trace the process started with: %v", err)
	}
	return p, dir
}

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
`, residenttest.TraceParent, path))
	if r.err != nil {
		t.Fatalf("%v\nstderr:\n%s", r.err, r.stderr)
	}
	spans := residenttest.ReadSpans(t, path)
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	outer, raises, dies, long := spans[0], spans[1], spans[2], spans[3]
	if spanID(outer.ParentSpanID) != residenttest.RunSpan || raises.ParentSpanID != outer.SpanID || dies.ParentSpanID != outer.SpanID || long.ParentSpanID != outer.SpanID {
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
	headers := fmt.Sprintf(`{"Accept": "x", "traceparent": "00-%s-%s-01", "tracestate": "v=1"}`, residenttest.Trace, spanID(outer.SpanID))
	if want := "run: " + residenttest.TraceParent + "\nouter: True " + headers + "\ncaught: bad ticket\nexit: 1\nafter: " + residenttest.TraceParent + "\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
}

// TestPythonSpanOff: with tracing off span() records nothing and changes
// nothing, and traced_headers() returns a copy.
func TestPythonSpanOff(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []string{
		`os.environ.pop("TRACEPARENT", None); os.environ.pop("TRACE_SPANS_PATH", None)`,
		fmt.Sprintf(`os.environ["TRACEPARENT"] = %q; os.environ.pop("TRACE_SPANS_PATH", None)`, residenttest.TraceParent),
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
		if strings.Contains(env, residenttest.TraceParent) {
			tp = residenttest.TraceParent
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
	p, _ := serveTracedRun(t, exec.Command(writePythonHook(t, `
def handle():
    with open(os.environ["SEEN"], "a") as f:
        f.write("%s|%s|%s\n" % (os.environ.get("TRACEPARENT", ""), os.environ.get("TRACESTATE", ""), os.path.basename(os.environ.get("TRACE_SPANS_PATH", ""))))
    with hook.span("run"):
        pass
hook.run(handle)
`)), `v=a\u0026b`, "SEEN="+seen)
	data, _ := os.ReadFile(seen)
	if want := "||\n" + residenttest.TraceParent + "|v=a&b|spans-2\n||\n"; string(data) != want {
		t.Errorf("runs saw\n%s\nwant\n%s\nlog:\n%s", data, want, p.log)
	}
}
