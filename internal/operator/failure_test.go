package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/queue"
)

const leaked = "SUPERSECRETVALUE123"

// The message of a failed run's Event says what failed in the operator's
// words, never what the hook printed or the API server quoted.
func TestFailedMessageLeavesOutHookOutput(t *testing.T) {
	task := &queue.Task{Hook: &hook.Hook{Name: "h.sh"}, Contexts: []binding.Context{{Binding: "secrets"}}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)
	invalid.ErrStatus.Message = `ConfigMap "x" is invalid: metadata.labels: Invalid value: "` + leaked + `"`
	// The second operation lacks its name; its patch carries the value.
	_, parseErr := ops.Parse([]byte(`{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}}
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "n", "mergePatch": {"data": {"k": "` + leaked + `"}}}`))
	if parseErr == nil {
		t.Fatal("ops.Parse took an operation without a name")
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"exit", runFailed(errors.New("hook h.sh: exit code 4; stderr ends with:\n+ pw=" + leaked + "\ncannot use " + leaked)), "the hook failed: exit code 4"},
		{"signal", runFailed(errors.New("hook h.sh: killed by signal killed; stderr ends with:\n" + leaked)), "killed by signal killed"},
		{"timeout", runFailed(fmt.Errorf("hook h.sh: timed out after 1s: %w", context.DeadlineExceeded)), "the hook timed out"},
		{"apply", fail(applyStatus(&ops.Error{Index: 2, Op: "Create v1/ConfigMap ns/x", Err: invalid}), &ops.Error{Index: 2, Err: invalid}), "operation 2 (Create v1/ConfigMap ns/x) failed: Invalid"},
		{"operations", fail(invalidOperations, errors.New("operation 0: "+leaked)), "invalid operations to $KUBERNETES_PATCH_PATH"},
		{"first invalid operation", fail(invalidOps(parseErr), parseErr), "invalid operations to $KUBERNETES_PATCH_PATH; none were applied (the first invalid one: operation 1, a MergePatch, at name)"},
		{"unwrapped", errors.New(leaked), "the run failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := failedMessage(task, tc.err)
			if strings.Contains(msg, leaked) {
				t.Errorf("message %q carries the hook's output", msg)
			}
			for _, want := range []string{tc.want, "hook h.sh failed (binding secrets, attempt 1)", "see the operator's log"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

func runFailed(err error) error { return fail(runStatus(err), err) }

// The failure keeps the whole error for the log and errors.Is.
func TestFailureKeepsTheError(t *testing.T) {
	inner := fmt.Errorf("hook h: timed out: %w", context.DeadlineExceeded)
	err := fail(runStatus(inner), inner)
	if err.Error() != inner.Error() || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("fail changed the error: %v", err)
	}
	if fail("x", nil) != nil {
		t.Error("fail of nil is not nil")
	}
}

// The Event about a reload that failed leaves out the stderr of a hook's
// --config.
func TestReloadMessageLeavesOutConfigStderr(t *testing.T) {
	errs := hook.ConfigErrors{
		{Hook: "a.sh", Reason: "--config failed (exit status 1); make --config print the configuration and exit 0; its stderr ends with: token=" + leaked},
		{Hook: "b.sh", Field: "kubernetes[0].kind", Reason: "missing"},
	}
	got := withoutHookOutput(fmt.Errorf("load: %w", errs))
	if strings.Contains(got, leaked) {
		t.Errorf("message carries --config's stderr: %q", got)
	}
	for _, want := range []string{"a.sh", "exit 0; its stderr is in the operator's log", "b.sh: kubernetes[0].kind: missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q does not say %q", got, want)
		}
	}
}
