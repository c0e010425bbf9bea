package executor_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// noObjects is an Objects without bindings.
type noObjects struct{}

func (noObjects) Bindings() []*watch.Binding                   { return nil }
func (noObjects) Binding(string, string) *watch.Binding        { return nil }
func (noObjects) StatusWritten(string, string, string, string) {}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recordingSink keeps the operations it is given.
type recordingSink struct{ applied []ops.Operation }

func (s *recordingSink) Apply(_ context.Context, _ string, operations []ops.Operation) error {
	s.applied = append(s.applied, operations...)
	return nil
}
func (s *recordingSink) EnsureFinalizer(finalizer.Target)                        {}
func (s *recordingSink) RemoveFinalizer(context.Context, finalizer.Target) error { return nil }

// scriptHook writes script into a fresh dir as the hook name.
func scriptHook(t *testing.T, name, script string) *hook.Hook {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	must(t, os.WriteFile(path, []byte(script), 0o755))
	return &hook.Hook{Name: name, Path: path, Dir: dir}
}

// quietExecutor returns an Executor over objects and sink that runs hooks
// with a Runner of its own and logs nothing.
func quietExecutor(t *testing.T, objects executor.Objects, sink executor.Sink) *executor.Executor {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return &executor.Executor{Objects: objects, Runner: &run.Runner{TmpDir: t.TempDir(), Env: os.Environ(), Log: log}, Sink: sink, Log: log}
}

// Admit runs the hook with a Validating or Mutating context holding the
// review, returns its checked response, applies the operations it wrote
// besides, and turns a failed, hanging or badly answering hook into an
// error that names the hook but not its output.
func TestAdmit(t *testing.T) {
	h := scriptHook(t, "policy.sh", `#!/usr/bin/env bash
set -euo pipefail
mode=$(jq -r '.[0].review.request.object.data.mode' "$BINDING_CONTEXT_PATH")
jq -c '.[0] | {binding, type, uid: .review.request.uid, snapshots}' "$BINDING_CONTEXT_PATH" >&2
case $mode in
  allow) echo '{"allowed": true, "warnings": ["looked at it"]}' >"$VALIDATING_RESPONSE_PATH"
         echo '{"operation": "Delete", "kind": "ConfigMap", "namespace": "n", "name": "x"}' >"$KUBERNETES_PATCH_PATH" ;;
  deny)  echo '{"allowed": false, "message": "mode deny is refused"}' >"$ADMISSION_RESPONSE_PATH" ;;
  bad)   echo '{"allowed": "yes"}' >"$VALIDATING_RESPONSE_PATH" ;;
  fail)  echo "secret detail" >&2; exit 3 ;;
  badops) echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"
          echo '{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "n", "name": "secret detail"}' >"$KUBERNETES_PATCH_PATH" ;;
  hang)  sleep 30 ;;
  deaf)  trap '' TERM; sleep 30 & while :; do wait || true; done ;;
esac
`)
	sink := &recordingSink{}
	e := quietExecutor(t, noObjects{}, sink)
	b := hook.WebhookBinding{Common: hook.Common{Name: "policy.example.com"}}
	review := func(mode string) []byte {
		return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-` + mode +
			`","object":{"data":{"mode":"` + mode + `"}}}}`)
	}

	resp, err := e.Admit(context.Background(), h, b, false, review("allow"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Allowed || len(resp.Warnings) != 1 || len(sink.applied) != 1 || sink.applied[0].Type != ops.Delete {
		t.Errorf("allow: %+v, applied %v", resp, sink.applied)
	}
	resp, err = e.Admit(context.Background(), h, b, true, review("deny"), 5*time.Second)
	if err != nil || resp.Allowed || resp.Message != "mode deny is refused" {
		t.Errorf("deny: %+v, %v", resp, err)
	}
	for mode, want := range map[string]string{
		"bad":    `invalid response in $VALIDATING_RESPONSE_PATH: the response is not an admission response: "allowed" must be a bool`,
		"fail":   "hook policy.sh failed for binding policy.example.com",
		"hang":   "hook policy.sh did not answer in time for binding policy.example.com: it was stopped so that its run ends within 1s",
		"badops": "hook policy.sh, binding policy.example.com: the hook wrote invalid operations to $KUBERNETES_PATCH_PATH; none were applied (the first invalid one: operation 0, a MergePatch, at ",
		// Ignores SIGTERM: only SIGKILL, after a kill grace cut to fit in
		// the second, ends it (the Runner's own grace is 5 s).
		"deaf": "hook policy.sh did not answer in time for binding policy.example.com",
	} {
		start := time.Now()
		_, err := e.Admit(context.Background(), h, b, false, review(mode), time.Second)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret detail") {
			t.Errorf("%s: error %v, want one saying %q and not the hook's output", mode, err, want)
		}
		// The Runner's own kill grace (5 s) would make a hook that ignores
		// SIGTERM answer after 6 s; short of that, a loaded machine has
		// its slack.
		if took := time.Since(start); took >= time.Second+run.DefaultKillGrace {
			t.Errorf("%s: took %s to answer, where the run must end within 1 s", mode, took)
		}
	}
}

// The context a hook gets for an admission request: the binding, its type,
// and the review as the API server sent it.
func TestAdmitContext(t *testing.T) {
	out := filepath.Join(t.TempDir(), "context.json")
	h := scriptHook(t, "record.sh", "#!/usr/bin/env bash\ncp \"$BINDING_CONTEXT_PATH\" "+out+"\necho '{\"allowed\":true}' >\"$VALIDATING_RESPONSE_PATH\"\n")
	e := quietExecutor(t, noObjects{}, &recordingSink{})
	b := hook.WebhookBinding{Common: hook.Common{Name: "m.example.com"}}
	rv := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":"CREATE"}}`
	if _, err := e.Admit(context.Background(), h, b, true, []byte(rv), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0]["binding"] != "m.example.com" || got[0]["type"] != "Mutating" ||
		got[0]["review"].(map[string]any)["request"].(map[string]any)["uid"] != "u-1" || got[0]["snapshots"] != nil {
		t.Errorf("the context: %s", data)
	}
}
