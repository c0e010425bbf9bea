package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run calls Handle with a binding context file holding contexts and returns
// the exit code, stdout, stderr and the patch file.
func run(t *testing.T, handler Handler, contexts string, args ...string) (code int, stdout, stderr, patch string) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		EnvBindingContextPath:  filepath.Join(dir, "contexts.json"),
		EnvKubernetesPatchPath: filepath.Join(dir, "operations.json"),
	}
	if err := os.WriteFile(env[EnvBindingContextPath], []byte(contexts), 0o600); err != nil {
		t.Fatal(err)
	}
	// The runtime creates the output files empty.
	if err := os.WriteFile(env[EnvKubernetesPatchPath], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code = Handle(Config{Schedule: []ScheduleBinding{{Crontab: "@hourly"}}}, handler, args, func(k string) string { return env[k] }, &out, &errOut)
	data, err := os.ReadFile(env[EnvKubernetesPatchPath])
	if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String(), string(data)
}

var deleteX = Delete(Ref{Kind: "ConfigMap", Namespace: "app", Name: "x"})

func TestHandleConfig(t *testing.T) {
	called := false
	code, stdout, stderr, _ := run(t, func(*Context) error { called = true; return nil }, `[]`, "--config")
	if code != 0 || stdout != `{"configVersion":"v1","schedule":[{"crontab":"@hourly"}]}`+"\n" || stderr != "" || called {
		t.Errorf("exit %d, stdout %q, stderr %q, handler called %v", code, stdout, stderr, called)
	}
}

func TestHandleWritesOperations(t *testing.T) {
	var got *Context
	code, stdout, stderr, patch := run(t, func(ctx *Context) error {
		got = ctx
		ctx.Log.Info("reconciling", "count", len(ctx.Contexts))
		ctx.Emit(deleteX)
		ctx.Emit(deleteX, Requeue(Ref{Name: "x", Namespace: "app"}, 5e9))
		return nil
	}, `[{"binding":"a","type":"Schedule"},{"binding":"b","type":"Schedule"}]`)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if len(got.Contexts) != 2 || got.Contexts[1].Binding != "b" || len(got.Operations()) != 3 {
		t.Errorf("context: %+v", got)
	}
	lines := strings.Split(strings.TrimSuffix(patch, "\n"), "\n")
	want := []string{
		`{"operation":"Delete","kind":"ConfigMap","namespace":"app","name":"x"}`,
		`{"operation":"Delete","kind":"ConfigMap","namespace":"app","name":"x"}`,
		`{"operation":"Requeue","namespace":"app","name":"x","after":"5s"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("patch file:\n%s\nwant:\n%s", patch, strings.Join(want, "\n"))
	}
	// The log line is a JSON object the runtime merges into its own record,
	// without a time of its own.
	var rec map[string]any
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("stderr %q: %v", stderr, err)
	}
	if rec["msg"] != "reconciling" || rec["level"] != "INFO" || rec["count"] != 2.0 || rec["time"] != nil {
		t.Errorf("log record %v", rec)
	}
}

func TestHandleNoOperations(t *testing.T) {
	code, _, stderr, patch := run(t, func(*Context) error { return nil }, `[]`)
	if code != 0 || patch != "" || stderr != "" {
		t.Errorf("exit %d, patch %q, stderr %q", code, patch, stderr)
	}
}

func TestHandleFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handler  Handler
		contexts string
		args     []string
		code     int
		stderr   string
	}{
		{"handler error", func(ctx *Context) error { ctx.Emit(deleteX); return errors.New("database unreachable") },
			`[]`, nil, 1, "hook failed, no operation is applied: database unreachable"},
		{"panic", func(ctx *Context) error { ctx.Emit(deleteX); var m map[string]int; m["x"] = 1; return nil },
			`[]`, nil, 1, "hook failed, no operation is applied: panic: assignment to entry in nil map"},
		{"invalid operation", func(ctx *Context) error { ctx.Emit(deleteX, Status(Ref{Name: "x"}, nil)); return nil },
			`[]`, nil, 1, "operation 1: Status x: status: required"},
		{"contexts not an array", func(*Context) error { return nil },
			`{"binding":"a"}`, nil, 1, "it must hold a JSON array of binding contexts"},
		{"unknown arguments", func(*Context) error { return nil },
			`[]`, []string{"--help"}, 2, `unexpected arguments ["--help"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr, patch := run(t, tc.handler, tc.contexts, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
			if patch != "" {
				t.Errorf("a failed run wrote operations: %q", patch)
			}
		})
	}
}

func TestHandleWithoutEnvironment(t *testing.T) {
	var stderr bytes.Buffer
	code := Handle(Config{}, func(*Context) error { return nil }, nil, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "$BINDING_CONTEXT_PATH is not set") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if err := writeOperations("", []Operation{deleteX}); err == nil || !strings.Contains(err.Error(), "KUBERNETES_PATCH_PATH is not set") {
		t.Errorf("writing without a path: %v", err)
	}
}
