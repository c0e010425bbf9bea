package operator

import (
	"errors"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/queue"
)

const leaked = "SUPERSECRETVALUE123"

// The message of a failed run's Event names the hook, its bindings and the
// attempt, and says what failed only in the executor's public words
// (executor.PublicReason, tested there for every kind of failure), never
// the error itself, which may end with what the hook printed.
func TestFailedMessageLeavesOutHookOutput(t *testing.T) {
	task := &queue.Task{Hook: &hook.Hook{Name: "h.sh"}, Contexts: []binding.Context{{Binding: "secrets"}, {Binding: "secrets"}, {Binding: "cms"}}}
	msg := failedMessage(task, errors.New("hook h.sh: exit code 4; stderr ends with:\n+ pw="+leaked))
	if strings.Contains(msg, leaked) {
		t.Errorf("message %q carries the hook's output", msg)
	}
	if want := "hook h.sh failed (binding secrets,cms, attempt 1): the run failed; see the operator's log for its output"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}
