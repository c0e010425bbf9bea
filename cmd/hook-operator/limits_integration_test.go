package main_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// --max-hook-output reaches the live operator's runs: with a limit of
// 1 KiB, an onStartup hook that writes 2 KiB of operations fails with an
// error naming the file and the limit, and nothing of it is applied.
func TestIntegrationMaxHookOutputReachesRuns(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	hooks := t.TempDir()
	// One ConfigMap create padded past 1 KiB with a long value.
	writeHook(t, hooks, "big.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, `
pad=$(printf 'x%.0s' {1..2048})
cat >"$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"`+ns+`"},"data":{"pad":"$pad"}}}
OPS
`))
	o := startObserved(t, bin, c.Kubeconfig, hooks, "--max-hook-output", "1Ki")
	waitUntil(t, "the run refused for its size", func() bool {
		logs := o.logs.String()
		return strings.Contains(logs, "$KUBERNETES_PATCH_PATH") && strings.Contains(logs, "over the limit of 1 KiB")
	}, o.logs.String)
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "big", metav1.GetOptions{}); err == nil {
		t.Errorf("the ConfigMap of a refused run was created")
	}
}
