package hooktest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/cli/hooktest"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// hookScript is a bash hook that prints config when asked for it, and
// runs body otherwise.
func hookScript(config, body string) string {
	return `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == --config ]]; then
  echo '` + config + `'
  exit 0
fi
` + body
}

// A hook that labels every ConfigMap it sees with the number of keys in
// its data.
var countHook = hookScript(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","jqFilter":".data"}]}`,
	`jq -c '.[] | (if .type == "Synchronization" then .objects[] else . end)
  | select(.object != null and .watchEvent != "Deleted")
  | {operation: "MergePatch", kind: "ConfigMap", namespace: .object.metadata.namespace, name: .object.metadata.name,
     mergePatch: {metadata: {labels: {keys: (.filterResult | length | tostring)}}}}' "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"
`)

const objects = `apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: default}
data: {a: "1"}
`

const events = `- type: Modified
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: one, namespace: default}
    data: {a: "1", b: "2"}
`

func setup(t *testing.T) (hooksDir, casesDir string) {
	t.Helper()
	hooksDir, casesDir = t.TempDir(), t.TempDir()
	write(t, filepath.Join(hooksDir, "count.sh"), countHook, 0o755)
	c := filepath.Join(casesDir, "count")
	write(t, filepath.Join(c, hooktest.ObjectsFile), objects, 0o644)
	write(t, filepath.Join(c, hooktest.EventsFile), events, 0o644)
	return hooksDir, casesDir
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, hooksDir, casesDir string, update bool) (string, error) {
	t.Helper()
	out, _, err := runFlags(t, casesDir, hooktest.Flags{HooksDir: hooksDir, Update: update})
	return out, err
}

// runFlags runs the cases with f (plus fixed limits) and returns what test
// printed and what it logged outside the cases.
func runFlags(t *testing.T, casesDir string, f hooktest.Flags) (out, logged string, err error) {
	t.Helper()
	var stdout, logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	f.MaxRuns, f.HookTimeout, f.ConfigTimeout = 100, time.Minute, hook.DefaultConfigTimeout
	err = hooktest.Run(context.Background(), casesDir, f, &stdout, log)
	return stdout.String(), logs.String(), err
}

// update runs the cases with --update, and returns what it printed and
// the expected.yaml it wrote for the case name.
func update(t *testing.T, hooksDir, casesDir, name string) (out, expected string) {
	t.Helper()
	out, err := run(t, hooksDir, casesDir, true)
	if err != nil {
		t.Fatalf("--update: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(casesDir, name, hooktest.ExpectedFile))
	if err != nil {
		t.Fatal(err)
	}
	return out, string(b)
}

// A case's hook output is shown when the case fails, or with -v; a passing
// case's is not, and none of it goes to the log.
func TestHookOutputOnlyForFailingCasesOrVerbose(t *testing.T) {
	hooksDir, casesDir := setup(t)
	const line = "counting the keys now"
	write(t, filepath.Join(hooksDir, "count.sh"), strings.Replace(countHook, "jq -c", "echo '"+line+"' >&2\njq -c", 1), 0o755)
	if _, err := run(t, hooksDir, casesDir, true); err != nil {
		t.Fatal(err)
	}
	out, logged, err := runFlags(t, casesDir, hooktest.Flags{HooksDir: hooksDir})
	if err != nil || strings.Contains(out+logged, line) {
		t.Errorf("a passing case showed its hook output (err %v):\n%s\nlog:\n%s", err, out, logged)
	}
	out, _, err = runFlags(t, casesDir, hooktest.Flags{HooksDir: hooksDir, Verbose: true})
	if err != nil || !strings.Contains(out, "PASS count") || !strings.Contains(out, "    hook output:\n") || !strings.Contains(out, line) {
		t.Errorf("-v did not show a passing case's hook output (err %v):\n%s", err, out)
	}
	write(t, filepath.Join(hooksDir, "count.sh"), strings.Replace(countHook, "jq -c", "echo '"+line+"' >&2\necho broken >&2; exit 3\njq -c", 1), 0o755)
	out, logged, err = runFlags(t, casesDir, hooktest.Flags{HooksDir: hooksDir})
	if !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "FAIL count") || !strings.Contains(out, "| ") || !strings.Contains(out, line) {
		t.Errorf("a failing case did not show its hook output (err %v):\n%s", err, out)
	}
	if strings.Contains(logged, line) {
		t.Errorf("the hook output went to the log too:\n%s", logged)
	}
}

func TestUpdateThenPass(t *testing.T) {
	hooksDir, casesDir := setup(t)
	if out, err := run(t, hooksDir, casesDir, false); !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "--update") {
		t.Fatalf("without expected.yaml: err %v, want a failure that says to use --update:\n%s", err, out)
	}
	out, expected := update(t, hooksDir, casesDir, "count")
	if !strings.Contains(out, "UPDATED count") {
		t.Fatalf("--update:\n%s", out)
	}
	// Synchronization labels "one" with keys=1; the label is not in the
	// filter, so it runs nothing; the Modified event relabels it keys=2.
	for _, want := range []string{"type: Synchronization", "watchEvent: Modified", "keys: \"1\"", "keys: \"2\"", "action: Updated", "+    keys: \"2\""} {
		if !strings.Contains(expected, want) {
			t.Errorf("expected.yaml lacks %q:\n%s", want, expected)
		}
	}
	if n := strings.Count(expected, "\nhook: count.sh"); n != 2 {
		t.Errorf("expected.yaml has %d runs, want 2:\n%s", n, expected)
	}
	out, err := run(t, hooksDir, casesDir, false)
	if err != nil || !strings.Contains(out, "PASS count (2 runs") || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("after --update the case must pass: %v\n%s", err, out)
	}
}

// --update does not record a run that failed as the expected one: the case
// fails, saying which run failed and why, and expected.yaml is not
// written, unless --update-failed says that the failure is what the case
// tests.
func TestUpdateRefusesFailedRuns(t *testing.T) {
	hooksDir, casesDir := setup(t)
	write(t, filepath.Join(hooksDir, "count.sh"), strings.Replace(countHook, "jq -c", "echo broken >&2; exit 3\njq -c", 1), 0o755)
	expected := filepath.Join(casesDir, "count", hooktest.ExpectedFile)
	out, err := run(t, hooksDir, casesDir, true)
	if !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "FAIL count") || !strings.Contains(out, "of count.sh for cms") ||
		!strings.Contains(out, "expected.yaml was not written") || !strings.Contains(out, "--update-failed") {
		t.Errorf("--update with a failing run: err %v, want a failed case naming the run and --update-failed:\n%s", err, out)
	}
	if _, err := os.Stat(expected); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("expected.yaml written from a failed run: %v", err)
	}
	out, _, err = runFlags(t, casesDir, hooktest.Flags{HooksDir: hooksDir, Update: true, UpdateFailed: true})
	if err != nil || !strings.Contains(out, "UPDATED count") {
		t.Fatalf("--update --update-failed: %v\n%s", err, out)
	}
	if data, err := os.ReadFile(expected); err != nil || !strings.Contains(string(data), "error:") {
		t.Errorf("expected.yaml after --update-failed: %v\n%s; want the run's error in it", err, data)
	}
	if out, err := run(t, hooksDir, casesDir, false); err != nil {
		t.Errorf("the recorded failure, run again: %v\n%s", err, out)
	}
}

func TestFailShowsDiff(t *testing.T) {
	hooksDir, casesDir := setup(t)
	if _, err := run(t, hooksDir, casesDir, true); err != nil {
		t.Fatal(err)
	}
	// The hook changes: it now counts one key too many.
	write(t, filepath.Join(hooksDir, "count.sh"), strings.Replace(countHook, "length | tostring", "length + 1 | tostring", 1), 0o755)
	out, err := run(t, hooksDir, casesDir, false)
	if !errors.Is(err, hooktest.ErrFailed) {
		t.Fatalf("err %v, want ErrFailed\n%s", err, out)
	}
	for _, want := range []string{"FAIL count", "--- expected", "+++ actual", `-        keys: "1"`, `+        keys: "2"`, "0 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Fields left out of an expected run are not compared.
func TestPartialExpectations(t *testing.T) {
	hooksDir, casesDir := setup(t)
	write(t, filepath.Join(casesDir, "count", hooktest.ExpectedFile), `# only the operations matter here
---
hook: count.sh
operations:
- {operation: MergePatch, kind: ConfigMap, namespace: default, name: one, mergePatch: {metadata: {labels: {keys: "1"}}}}
---
hook: count.sh
operations:
- {operation: MergePatch, kind: ConfigMap, namespace: default, name: one, mergePatch: {metadata: {labels: {keys: "2"}}}}
`, 0o644)
	if out, err := run(t, hooksDir, casesDir, false); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// One run too few in the expectations is a failure.
	write(t, filepath.Join(casesDir, "count", hooktest.ExpectedFile), `---
hook: count.sh
`, 0o644)
	if out, err := run(t, hooksDir, casesDir, false); !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "+--- # run 2") {
		t.Fatalf("a missing run must fail the case with a diff: %v\n%s", err, out)
	}
}

func TestNoCases(t *testing.T) {
	hooksDir, _ := setup(t)
	if _, err := run(t, hooksDir, t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "no test cases") {
		t.Fatalf("err %v, want no test cases", err)
	}
}

// The walkthrough in examples/testing passes against the shipped hooks
// (Go hooks built from their source).
func TestExamplesPass(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, testoperator.Hooks(t), filepath.Join(root, "examples", "testing"), false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// A policy tested before it blocks anyone: a case's events hold admission
// requests, expected.yaml the hook's answers (--update writes them); a
// hook that answers otherwise fails the case.
func TestAdmissionCase(t *testing.T) {
	hooksDir, casesDir := t.TempDir(), t.TempDir()
	policy := hookScript(`{"configVersion":"v1","kubernetesValidating":[{"name":"replicas.example.com","rules":[{"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"],"operations":["CREATE"]}]}]}`,
		`if (( $(jq '.[0].review.request.object.spec.replicas' "$BINDING_CONTEXT_PATH") > LIMIT )); then
  echo '{"allowed": false, "message": "replicas must be at most LIMIT"}' >"$VALIDATING_RESPONSE_PATH"
else
  echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"
fi
`)
	write(t, filepath.Join(hooksDir, "policy.sh"), strings.ReplaceAll(policy, "LIMIT", "10"), 0o755)
	write(t, filepath.Join(casesDir, "replicas", hooktest.EventsFile), `
- admission:
    binding: replicas.example.com
    request: {operation: CREATE, object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: small, namespace: default}, spec: {replicas: 3}}}
- admission:
    binding: replicas.example.com
    request: {operation: CREATE, object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: big, namespace: default}, spec: {replicas: 50}}}
`, 0o644)
	_, expected := update(t, hooksDir, casesDir, "replicas")
	for _, want := range []string{"type: Validating", "allowed: true", "allowed: false", "message: replicas must be at most 10"} {
		if !strings.Contains(expected, want) {
			t.Errorf("expected.yaml lacks %q:\n%s", want, expected)
		}
	}
	if out, err := run(t, hooksDir, casesDir, false); err != nil || !strings.Contains(out, "PASS replicas (2 runs") {
		t.Fatalf("after --update the case must pass: %v\n%s", err, out)
	}
	write(t, filepath.Join(hooksDir, "policy.sh"), strings.ReplaceAll(policy, "LIMIT", "100"), 0o755)
	out, err := run(t, hooksDir, casesDir, false)
	if !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "FAIL replicas") || !strings.Contains(out, "allowed") {
		t.Errorf("a policy that now allows what it denied must fail the case: %v\n%s", err, out)
	}
}

// A mutating hook that the API server may call again (reinvocationPolicy
// IfNeeded) is tested as docs/webhooks.md says: a second admission request
// with the object as the hook's own patch left it must get no patch.
var defaultsHook = hookScript(`{"configVersion":"v1","kubernetesMutating":[{"name":"defaults.example.com","reinvocationPolicy":"POLICY","rules":[{"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"],"operations":["CREATE"]}]}]}`,
	`if jq -e '.[0].review.request.object.metadata.labels.team != null' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo '{"allowed": true}' >"$ADMISSION_RESPONSE_PATH"
else
  patch=$(echo '[{"op": "add", "path": "/metadata/labels", "value": {"team": "none"}}]' | base64 -w0)
  echo "{\"allowed\": true, \"patch\": \"$patch\"}" >"$ADMISSION_RESPONSE_PATH"
fi
`)

func TestReinvokedMutatingCase(t *testing.T) {
	hooksDir, casesDir := t.TempDir(), t.TempDir()
	write(t, filepath.Join(hooksDir, "defaults.sh"), strings.ReplaceAll(defaultsHook, "POLICY", "IfNeeded"), 0o755)
	write(t, filepath.Join(casesDir, "reinvoked", hooktest.EventsFile), `
- admission:
    binding: defaults.example.com
    request: {operation: CREATE, object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default}}}
- admission:   # called again, as the API server does with IfNeeded, on the object as the patch left it
    binding: defaults.example.com
    request: {operation: CREATE, object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default, labels: {team: none}}}}
`, 0o644)
	_, expected := update(t, hooksDir, casesDir, "reinvoked")
	runs := strings.Split(expected, "\n---\n")
	if len(runs) != 3 || !strings.Contains(runs[1], "type: Mutating") || !strings.Contains(runs[1], "team: none") ||
		!strings.Contains(runs[2], "allowed: true") || strings.Contains(runs[2], "patch:") {
		t.Errorf("expected.yaml: want a run with the patch and a run, the reinvocation, with none:\n%s", expected)
	}
	if out, err := run(t, hooksDir, casesDir, false); err != nil || !strings.Contains(out, "PASS reinvoked (2 runs") {
		t.Errorf("after --update the case must pass: %v\n%s", err, out)
	}

	// A policy the API server would refuse stops the test run before any
	// case, naming the hook, the binding and the values allowed.
	write(t, filepath.Join(hooksDir, "defaults.sh"), strings.ReplaceAll(defaultsHook, "POLICY", "Always"), 0o755)
	out, err := run(t, hooksDir, casesDir, false)
	want := `hook defaults.sh: kubernetesMutating[0].reinvocationPolicy: binding "defaults.example.com": "Always" is not a reinvocation policy; use Never (`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(out, "PASS") {
		t.Errorf("err %v\nwant %q, and no case run:\n%s", err, want, out)
	}
}

// A misspelled built-in kind fails the test run before any case runs: the
// binding would see nothing offline, as live it would wait for a CRD.
func TestMisspelledKindFails(t *testing.T) {
	hooksDir, casesDir := setup(t)
	write(t, filepath.Join(hooksDir, "count.sh"), strings.Replace(countHook, `"kind":"ConfigMap"`, `"kind":"ConfigMpa"`, 1), 0o755)
	out, err := run(t, hooksDir, casesDir, false)
	if err == nil || !strings.Contains(err.Error(), `hook count.sh: kubernetes[0].kind: binding "cms": "ConfigMpa" is not a kind of Kubernetes; did you mean ConfigMap?`) {
		t.Errorf("err %v, want the misspelled kind named\n%s", err, out)
	}
}
