package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunGivesHookItsFilesAndReturnsOutputs(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `
dir=$(dirname "$BINDING_CONTEXT_PATH")
for f in "$KUBERNETES_PATCH_PATH" "$METRICS_PATH" "$VALIDATING_RESPONSE_PATH" "$CONVERSION_RESPONSE_PATH"; do
  [ "$(dirname "$f")" = "$dir" ] || { echo "$f not in $dir" >&2; exit 1; }
  [ -f "$f" ] && [ ! -s "$f" ] || { echo "$f is not an empty file" >&2; exit 1; }
done
{
  echo "args=$#"
  echo "cwd=$(pwd -P)"
  echo "dir=$dir"
  echo "dirmode=$(stat -c %a "$dir")"
  echo "ctxmode=$(stat -c %a "$BINDING_CONTEXT_PATH")"
  echo "admission=$([ "$ADMISSION_RESPONSE_PATH" = "$VALIDATING_RESPONSE_PATH" ] && echo same || echo different)"
  echo "ctx=$(cat "$BINDING_CONTEXT_PATH")"
} > "$KUBERNETES_PATCH_PATH"
echo '{"name":"m","action":"set","value":1}' > "$METRICS_PATH"
echo '{"allowed":true}' > "$ADMISSION_RESPONSE_PATH"
echo '{"convertedObjects":[]}' > "$CONVERSION_RESPONSE_PATH"
`)
	contexts := `[{"binding":"onStartup"},{"binding":"pods","type":"Synchronization","objects":[]}]`
	res, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(contexts), Binding: "onStartup", Queue: "main"})
	if err != nil {
		t.Fatal(err)
	}

	report := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(res.Operations))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		report[k] = v
	}
	hookDir, err := filepath.EvalSymlinks(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"args":      "0",
		"cwd":       hookDir,
		"dirmode":   "700",
		"ctxmode":   "600",
		"admission": "same",
		"ctx":       contexts,
	}
	for k, v := range want {
		if report[k] != v {
			t.Errorf("hook saw %s=%q, want %q", k, report[k], v)
		}
	}
	if tmpDirOf(report["dir"]) != r.TmpDir {
		t.Errorf("run dir %s is not under TmpDir %s", report["dir"], r.TmpDir)
	}
	if _, err := os.Stat(report["dir"]); !os.IsNotExist(err) {
		t.Errorf("run dir %s still exists after Run: %v", report["dir"], err)
	}
	assertEmptyDir(t, r.TmpDir)

	if got := string(res.Metrics); got != `{"name":"m","action":"set","value":1}`+"\n" {
		t.Errorf("Metrics = %q", got)
	}
	if got := string(res.ValidatingResponse); got != `{"allowed":true}`+"\n" {
		t.Errorf("ValidatingResponse = %q (written through ADMISSION_RESPONSE_PATH)", got)
	}
	if got := string(res.ConversionResponse); got != `{"convertedObjects":[]}`+"\n" {
		t.Errorf("ConversionResponse = %q", got)
	}
	if res.Duration <= 0 {
		t.Errorf("Duration = %v", res.Duration)
	}
	// bash alone needs a few MiB; a value in KiB would be a thousand times smaller.
	if res.MaxRSS < 1<<20 {
		t.Errorf("MaxRSS = %d bytes, want at least 1 MiB", res.MaxRSS)
	}
}

func TestRunEmptyContextsAreAnEmptyArray(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `cat "$BINDING_CONTEXT_PATH" > "$KUBERNETES_PATCH_PATH"`)
	res, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Operations) != "[]" {
		t.Errorf("binding context = %q, want []", res.Operations)
	}
}

// WriteContexts writes the contexts file in place of Contexts, into a
// private file, and a failure to write it is the run's error, before the
// hook starts.
func TestRunWriteContextsWritesTheFile(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `{ stat -c %a "$BINDING_CONTEXT_PATH"; cat "$BINDING_CONTEXT_PATH"; } > "$KUBERNETES_PATCH_PATH"`)
	contexts := `[{"binding":"pods","type":"Synchronization","objects":[]}]`
	write := func(w io.Writer) error {
		_, err := io.WriteString(w, contexts)
		return err
	}
	res, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`[]`), WriteContexts: write})
	if err != nil {
		t.Fatal(err)
	}
	if want := "600\n" + contexts; string(res.Operations) != want {
		t.Errorf("hook saw %q, want %q", res.Operations, want)
	}
	failing := func(io.Writer) error { return errors.New("binding pods: the review is not JSON") }
	_, err = r.Run(context.Background(), Request{Hook: h, WriteContexts: failing})
	if err == nil || !strings.Contains(err.Error(), "binding pods") || !strings.Contains(err.Error(), h.Name) {
		t.Fatalf("Run with a failing WriteContexts: %v, want the hook's name and the write's error", err)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestRunReplacesInheritedContractVariables(t *testing.T) {
	r, _ := testRunner(t)
	r.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"BINDING_CONTEXT_PATH=/inherited/context",
		"METRICS_PATH=/inherited/metrics",
		"ADMISSION_RESPONSE_PATH=/inherited/admission",
		"FOO=bar",
	}
	h := bashHook(t, `env > "$KUBERNETES_PATCH_PATH"`)
	res, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	values := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(res.Operations)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		count[k]++
		values[k] = v
	}
	for _, name := range []string{"BINDING_CONTEXT_PATH", "KUBERNETES_PATCH_PATH", "METRICS_PATH", "VALIDATING_RESPONSE_PATH", "ADMISSION_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH"} {
		if count[name] != 1 {
			t.Errorf("%s appears %d times in the hook's environment", name, count[name])
		}
		if !strings.HasPrefix(values[name], r.TmpDir) {
			t.Errorf("%s=%s, want a file under %s", name, values[name], r.TmpDir)
		}
	}
	if values["FOO"] != "bar" {
		t.Errorf("base environment lost: FOO=%q", values["FOO"])
	}
}

func TestRunFailureNamesExitCodeAndStderr(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `
echo '{"operation":"Delete"}' > "$KUBERNETES_PATCH_PATH"
for i in $(seq 1 15); do echo "problem $i" >&2; done
exit 3
`)
	res, err := r.Run(context.Background(), Request{Hook: h})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"hook test/hook.sh", "exit code 3", "problem 15"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	lines := strings.Split(res.StderrTail, "\n")
	if len(lines) != stderrTailLines || lines[0] != "problem 6" || lines[len(lines)-1] != "problem 15" {
		t.Errorf("StderrTail = %q, want problem 6 .. problem 15", res.StderrTail)
	}
	if len(res.Operations) != 0 {
		t.Errorf("outputs of a failed run were read: %q", res.Operations)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestRunFailureBySignal(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `kill -KILL $$`)
	_, err := r.Run(context.Background(), Request{Hook: h})
	if err == nil || !strings.Contains(err.Error(), "killed by signal killed") {
		t.Fatalf("error = %v, want killed by signal", err)
	}
	if !strings.Contains(err.Error(), "no stderr output") {
		t.Errorf("error %q should say stderr was empty", err)
	}
}

func TestRunStartFailure(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, "")
	if err := os.Chmod(h.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Run(context.Background(), Request{Hook: h})
	if err == nil || !strings.Contains(err.Error(), "start") {
		t.Fatalf("error = %v, want a start error", err)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestRunDoesNotStartWithEndedContext(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `touch ran`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Run(ctx, Request{Hook: h}); err == nil {
		t.Fatal("want an error")
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "ran")); err == nil {
		t.Error("the hook ran")
	}
}

func TestTimeoutPrecedence(t *testing.T) {
	h := bashHook(t, "")
	var r Runner
	if got := r.timeout(Request{Hook: h}); got != DefaultTimeout {
		t.Errorf("zero Runner: %v, want %v", got, DefaultTimeout)
	}
	r.DefaultTimeout = time.Minute
	if got := r.timeout(Request{Hook: h}); got != time.Minute {
		t.Errorf("Runner default: %v", got)
	}
	h.Config.Settings.Timeout = 2 * time.Minute
	if got := r.timeout(Request{Hook: h}); got != 2*time.Minute {
		t.Errorf("hook setting: %v", got)
	}
	if got := r.timeout(Request{Hook: h, Timeout: 3 * time.Minute}); got != 3*time.Minute {
		t.Errorf("request: %v", got)
	}
}

// With tracing on, a hook's spans are read whether its run succeeded or
// failed, and the file goes with the run: a dir kept for the next run
// (ReuseDirs) holds none, and a run without them reads nothing.
func TestRunReadsTheHooksSpans(t *testing.T) {
	r, _ := testRunner(t)
	r.ReuseDirs = true
	t.Cleanup(func() { _ = r.Close() })
	h := bashHook(t, `echo "${TRACEPARENT:-}" > "$KUBERNETES_PATCH_PATH"
[[ -n ${SPAN:-} ]] && echo "$SPAN" >> "$TRACE_SPANS_PATH"
exit "${CODE:-0}"`)
	tr := &Trace{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	for _, tc := range []struct {
		env, want string
		fail      bool
	}{
		{"SPAN={\"a\":1}", "{\"a\":1}\n", false},
		{"", "", false}, // the last run's file is gone
		{"SPAN={\"b\":2} CODE=3", "{\"b\":2}\n", true},
	} {
		r.Env = append([]string{"PATH=" + os.Getenv("PATH")}, strings.Fields(tc.env)...)
		res, err := r.Run(context.Background(), Request{Hook: h, Trace: tr})
		if (err != nil) != tc.fail {
			t.Fatalf("%s: err = %v", tc.env, err)
		}
		if string(res.Spans) != tc.want || res.SpansErr != nil {
			t.Errorf("%s: spans %q (%v), want %q", tc.env, res.Spans, res.SpansErr, tc.want)
		}
		if !tc.fail && strings.TrimSpace(string(res.Operations)) != tr.Parent {
			t.Errorf("%s: the hook's TRACEPARENT = %q", tc.env, res.Operations)
		}
	}
	r.Env = []string{"PATH=" + os.Getenv("PATH")}
	res, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil || res.Spans != nil || strings.TrimSpace(string(res.Operations)) != "" {
		t.Errorf("without a trace: err %v, spans %q, TRACEPARENT %q", err, res.Spans, res.Operations)
	}
}
