package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/ops"
)

const leaked = "SUPERSECRETVALUE123"

// What of a failed run may leave the log (its Event, a webhook's answer)
// says what failed in the operator's words, never what the hook printed or
// the API server quoted.
func TestPublicReasonLeavesOutHookOutput(t *testing.T) {
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
			reason := PublicReason(tc.err)
			if strings.Contains(reason, leaked) {
				t.Errorf("reason %q carries the hook's output", reason)
			}
			if !strings.Contains(reason, tc.want) {
				t.Errorf("reason %q does not say %q", reason, tc.want)
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
