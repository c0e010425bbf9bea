package hooktest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/cli/hooktest"
)

// A mutating hook that the API server may call again (reinvocationPolicy
// IfNeeded) is tested as docs/webhooks.md says: a second admission request
// with the object as the hook's own patch left it must get no patch.
const defaultsHook = `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == --config ]]; then
  echo '{"configVersion":"v1","kubernetesMutating":[{"name":"defaults.example.com","reinvocationPolicy":"POLICY","rules":[{"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"],"operations":["CREATE"]}]}]}'
  exit 0
fi
if jq -e '.[0].review.request.object.metadata.labels.team != null' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo '{"allowed": true}' >"$ADMISSION_RESPONSE_PATH"
else
  patch=$(echo '[{"op": "add", "path": "/metadata/labels", "value": {"team": "none"}}]' | base64 -w0)
  echo "{\"allowed\": true, \"patch\": \"$patch\"}" >"$ADMISSION_RESPONSE_PATH"
fi
`

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
	if out, err := run(t, hooksDir, casesDir, true); err != nil {
		t.Fatalf("--update: %v\n%s", err, out)
	}
	expected, err := os.ReadFile(filepath.Join(casesDir, "reinvoked", hooktest.ExpectedFile))
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(string(expected), "\n---\n")
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
