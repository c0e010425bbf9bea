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

// A hook that labels every ConfigMap it sees with the number of keys in
// its data.
const countHook = `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == --config ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","jqFilter":".data"}]}'
  exit 0
fi
jq -c '.[] | (if .type == "Synchronization" then .objects[] else . end)
  | select(.object != null and .watchEvent != "Deleted")
  | {operation: "MergePatch", kind: "ConfigMap", namespace: .object.metadata.namespace, name: .object.metadata.name,
     mergePatch: {metadata: {labels: {keys: (.filterResult | length | tostring)}}}}' "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"
`

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
	var out bytes.Buffer
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	err := hooktest.Run(context.Background(), casesDir, hooktest.Flags{
		HooksDir: hooksDir, Update: update, MaxRuns: 100, HookTimeout: time.Minute, ConfigTimeout: hook.DefaultConfigTimeout,
	}, &out, log)
	return out.String(), err
}

func TestUpdateThenPass(t *testing.T) {
	hooksDir, casesDir := setup(t)
	if out, err := run(t, hooksDir, casesDir, false); !errors.Is(err, hooktest.ErrFailed) || !strings.Contains(out, "--update") {
		t.Fatalf("without expected.yaml: err %v, want a failure that says to use --update:\n%s", err, out)
	}
	out, err := run(t, hooksDir, casesDir, true)
	if err != nil || !strings.Contains(out, "UPDATED count") {
		t.Fatalf("--update: %v\n%s", err, out)
	}
	expected, err := os.ReadFile(filepath.Join(casesDir, "count", hooktest.ExpectedFile))
	if err != nil {
		t.Fatal(err)
	}
	// Synchronization labels "one" with keys=1; the label is not in the
	// filter, so it runs nothing; the Modified event relabels it keys=2.
	for _, want := range []string{"type: Synchronization", "watchEvent: Modified", "keys: \"1\"", "keys: \"2\"", "action: Updated", "+    keys: \"2\""} {
		if !strings.Contains(string(expected), want) {
			t.Errorf("expected.yaml lacks %q:\n%s", want, expected)
		}
	}
	if n := strings.Count(string(expected), "\nhook: count.sh"); n != 2 {
		t.Errorf("expected.yaml has %d runs, want 2:\n%s", n, expected)
	}
	out, err = run(t, hooksDir, casesDir, false)
	if err != nil || !strings.Contains(out, "PASS count (2 runs") || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("after --update the case must pass: %v\n%s", err, out)
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
