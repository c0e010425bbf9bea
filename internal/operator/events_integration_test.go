package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/operator"
)

// A hook that watches Secrets, traces its commands (set -x) and fails
// prints a Secret's value on stderr. The Event about the failed run says
// which hook, binding and attempt failed and how, and points to the log;
// the value stays in the operator's log, out of the Event, which anyone
// allowed to get events reads.
func TestIntegrationFailedRunEventLeavesOutHookOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.events = true
	const secret = "SUPERSECRETVALUE123"
	e.bashHook("secrets.sh", `
configVersion: v1
kubernetes:
- name: secrets
  kind: Secret
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
`, `enc=$(jq -r '[.[] | .object // empty | .data.pw // empty][0] // ""' "$BINDING_CONTEXT_PATH")
[[ -n $enc ]] || exit 0
set -x
pw=$(echo "$enc" | base64 -d)
echo "cannot use $pw" >&2
exit 4`)
	e.start()
	e.eventually(30*time.Second, "the Synchronization run", func() bool { return len(e.runs("secrets.sh")) == 1 })
	ctx := context.Background()
	_, err := e.c.Client.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"pw": secret},
	}, metav1.CreateOptions{})
	must(t, err)

	msg := e.eventMessage("db", operator.EventReason)
	if !e.logs.contains(secret) {
		t.Fatalf("the hook's stderr is not in the operator's log; the test proves nothing")
	}
	if strings.Contains(msg, secret) || strings.Contains(msg, "+ pw=") || strings.Contains(msg, "cannot use") {
		t.Errorf("the Event carries the hook's stderr: %q", msg)
	}
	for _, want := range []string{"hook secrets.sh", "binding secrets", "attempt 1", "exit code 4", "see the operator's log"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the Event's message %q does not say %q", msg, want)
		}
	}
}
