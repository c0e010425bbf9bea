package main_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// --max-hook-output reaches the live operator's runs: with a limit of
// 1 KiB, an onStartup hook that writes 2 KiB of operations fails with an
// error naming the file and the limit, and nothing of it is applied.
func TestIntegrationMaxHookOutputReachesRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// One ConfigMap create padded past 1 KiB with a long value.
	h.hook(t, "big.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, `
pad=$(printf 'x%.0s' {1..2048})
cat >"$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"`+h.ns+`"},"data":{"pad":"$pad"}}}
OPS
`))
	o := h.start(t, "--max-hook-output", "1Ki")
	o.waitFor(t, "the run refused for its size", func() bool {
		logs := o.logs.String()
		return strings.Contains(logs, "$KUBERNETES_PATCH_PATH") && strings.Contains(logs, "over the limit of 1 KiB")
	})
	if _, err := h.c.Client.CoreV1().ConfigMaps(h.ns).Get(t.Context(), "big", metav1.GetOptions{}); err == nil {
		t.Errorf("the ConfigMap of a refused run was created")
	}
}
