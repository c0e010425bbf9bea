package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/residenttest"
)

// TestMain lets the test binary be a resident hook: with SDK_TEST_HOOK set,
// it is one, as `func main() { sdk.Run(config, handler) }` is.
func TestMain(m *testing.M) {
	if os.Getenv("SDK_TEST_HOOK") == "1" {
		Run(Config{Settings: &Settings{Resident: true}}, residentTestHandler)
	}
	os.Exit(m.Run())
}

// residentTestHandler does what the first binding context's name says. It
// reads $METRICS_PATH itself, as code written for one-shot runs does, and
// names its process in what it writes.
func residentTestHandler(ctx *Context) error {
	if len(ctx.Contexts) == 0 {
		return errors.New("no binding context")
	}
	pid := fmt.Sprint(os.Getpid())
	ctx.Log.Info("run", "binding", ctx.Contexts[0].Binding, "pid", pid)
	ctx.Emit(Delete(Ref{Kind: "ConfigMap", Namespace: "pid", Name: pid}))
	switch ctx.Contexts[0].Binding {
	case "fail":
		return errors.New("told to fail")
	case "panic":
		panic("told to panic")
	}
	return os.WriteFile(os.Getenv("METRICS_PATH"), []byte(`{"name":"runs","action":"add","value":1}`+"\n"), 0o600)
}

// residentProcess is a resident hook started as the runtime starts one
// (internal/residenttest): requests on fd 3, replies on fd 4, stdout and
// stderr its log stream.
type residentProcess struct {
	*residenttest.Process
	log *residenttest.Buffer
}

// startResident starts the test binary as a resident SDK hook.
func startResident(t *testing.T, env ...string) *residentProcess {
	t.Helper()
	p := residenttest.Start(t, exec.Command(os.Args[0]), append([]string{"SDK_TEST_HOOK=1"}, env...)...)
	return &residentProcess{Process: p, log: p.Log}
}

// run prepares a run's files as the runtime does, sends the request and
// waits for the reply; it returns the exit code and the run's folder.
func (p *residentProcess) run(t *testing.T, id, contexts string) (int, string) {
	t.Helper()
	r := p.Run(t, id, contexts)
	return r.ExitCode, filepath.Dir(r.Env["BINDING_CONTEXT_PATH"])
}

// stop closes the request pipe and returns how the process exited.
func (p *residentProcess) stop(t *testing.T) error { return p.Stop(t) }

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) { // missing: empty, as the runtime reads it
		t.Fatal(err)
	}
	return string(data)
}

// TestRunResident serves runs in one process, each like a one-shot run:
// success, error and panic answer with the exit codes a one-shot run
// exits with, and a failed run writes no operation.
func TestRunResident(t *testing.T) {
	p := startResident(t)
	pids := map[string]bool{}
	for i, tc := range []struct {
		binding string
		code    int
	}{{"ok", 0}, {"fail", 1}, {"panic", 1}, {"ok", 0}} {
		code, dir := p.run(t, fmt.Sprint(i+1), fmt.Sprintf(`[{"binding":%q,"type":"Schedule"}]`, tc.binding))
		if code != tc.code {
			t.Errorf("run %d (%s): exit code %d, want %d\nlog:\n%s", i+1, tc.binding, code, tc.code, p.log)
		}
		patch := readFile(t, filepath.Join(dir, "kubernetes_patch_path"))
		metrics := readFile(t, filepath.Join(dir, "metrics_path"))
		if tc.code != 0 {
			if patch != "" || metrics != "" {
				t.Errorf("failed run %d wrote operations %q, metrics %q", i+1, patch, metrics)
			}
			continue
		}
		var op struct{ Operation, Name string }
		if err := json.Unmarshal([]byte(patch), &op); err != nil || op.Operation != "Delete" {
			t.Fatalf("run %d wrote %q", i+1, patch)
		}
		pids[op.Name] = true
		if !strings.Contains(metrics, `"name":"runs"`) {
			t.Errorf("run %d: $METRICS_PATH read from the environment got %q", i+1, metrics)
		}
	}
	if len(pids) != 1 {
		t.Errorf("runs were served by processes %v, want one", pids)
	}
	if err := p.stop(t); err != nil {
		t.Errorf("exit at the end of the requests: %v, want 0\nlog:\n%s", err, p.log)
	}
	log := p.log.String()
	for _, want := range []string{`"msg":"run","binding":"fail"`, "hook failed, no operation is applied: told to fail", "panic: told to panic"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log stream lacks %q:\n%s", want, log)
		}
	}
}

// TestRunResidentBadSetup: a request that is not the protocol's, or a file
// descriptor variable that names none, ends the process with the reason.
func TestRunResidentBadSetup(t *testing.T) {
	p := startResident(t, "HOOK_OPERATOR_REPLY_FD=x")
	if err := p.stop(t); err == nil || !strings.Contains(p.log.String(), `$HOOK_OPERATOR_REPLY_FD is "x"`) {
		t.Errorf("exit %v, log %q", err, p.log)
	}

	var log bytes.Buffer
	code := serve(residentTestHandler, strings.NewReader(`{"id":"1","env":{}}`+"\nnot json\n"), &bytes.Buffer{}, &log)
	if code != 2 || !strings.Contains(log.String(), `request 2 is not {"id":"...","env":{...}}: "not json\n"`) {
		t.Errorf("exit %d, log %q", code, log.String())
	}
}

// TestServeSetsRunEnvironment: each run sees its own variables, and none of
// an earlier run's that it lacks.
func TestServeSetsRunEnvironment(t *testing.T) {
	t.Setenv("BINDING_CONTEXT_PATH", "")
	t.Setenv("EXTRA_PATH", "")
	_, contexts := contextsFile(t)
	var seen []string
	handler := func(*Context) error {
		seen = append(seen, os.Getenv("EXTRA_PATH"))
		return nil
	}
	requests := fmt.Sprintf(`{"id":"1","env":{"BINDING_CONTEXT_PATH":%q,"EXTRA_PATH":"/a"}}`+"\n"+
		`{"id":"2","env":{"BINDING_CONTEXT_PATH":%q}}`, contexts, contexts) // the last line without its newline
	replies := mustServe(t, handler, requests)
	if strings.Join(seen, ",") != "/a," || replies != `{"id":"1","exitCode":0}`+"\n"+`{"id":"2","exitCode":0}`+"\n" {
		t.Errorf("handler saw EXTRA_PATH %q; replies %q", seen, replies)
	}
}

// contextsFile writes an empty list of binding contexts into a fresh dir,
// and returns the dir and the file's path.
func contextsFile(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "contexts.json")
	if err := os.WriteFile(path, []byte(`[]`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// mustServe serves requests with handler as a resident hook does, fails
// t unless it exits 0, and returns its replies.
func mustServe(t *testing.T, handler Handler, requests string) string {
	t.Helper()
	var replies, log bytes.Buffer
	if code := serve(handler, strings.NewReader(requests), &replies, &log); code != 0 {
		t.Fatalf("exit %d: %s", code, log.String())
	}
	return replies.String()
}
