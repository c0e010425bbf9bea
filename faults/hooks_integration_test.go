package faults_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// writeHook writes an executable bash hook: config on --config, else body.
// NAMESPACE in both becomes ns.
func writeHook(t *testing.T, dir, name, ns, config, body string) {
	t.Helper()
	script := fmt.Sprintf("#!/usr/bin/env bash\nset -euo pipefail\nif [[ \"${1:-}\" == \"--config\" ]]; then\ncat <<'CONFIG'\n%s\nCONFIG\nexit 0\nfi\n%s\n", config, body)
	script = strings.ReplaceAll(script, "NAMESPACE", ns)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// faultBinding is the config of a hook run for the events (not the
// Synchronization) of the ConfigMaps of NAMESPACE labelled fault=label.
func faultBinding(label string) string {
	return `
configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector: {matchLabels: {fault: ` + label + `}}
  executeHookOnSynchronization: false`
}

// faultConfigMap creates the ConfigMap name of ns labelled fault=label.
func faultConfigMap(t *testing.T, c *testcluster.Cluster, ns, name, label string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fault": label}}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A hook that hangs is killed with its whole process group at its timeout
// (the child it started too), its run is retried, and the queue moves on.
func TestIntegrationFaultHookHangs(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	hooks, marks := t.TempDir(), t.TempDir()
	writeHook(t, hooks, "hang.sh", ns, faultBinding("hang")+"\nsettings: {timeout: 2s}", fmt.Sprintf(`
marks=%q
if [[ ! -e "$marks/hung" ]]; then
  touch "$marks/hung"
  sleep 300 &
  echo $! > "$marks/child.tmp" && mv "$marks/child.tmp" "$marks/child.pid"
  wait
fi
jq -r '.[] | select(.type == "Event") | .object.metadata.name' "$BINDING_CONTEXT_PATH" >> "$marks/seen"`, marks))
	op := startOperator(t, c.Kubeconfig, hooks, "--retry-initial-delay", "200ms")
	op.waitRunning(t)
	faultConfigMap(t, c, ns, "first", "hang")
	eventually(t, 30*time.Second, "the timeout", func() bool { return strings.Contains(op.logs.String(), "timed out") })
	data, err := os.ReadFile(filepath.Join(marks, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the hook's child to be killed with it", func() bool {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	})
	faultConfigMap(t, c, ns, "second", "hang")
	eventually(t, 30*time.Second, "the retry and the next event", func() bool {
		seen, _ := os.ReadFile(filepath.Join(marks, "seen"))
		return strings.Contains(string(seen), "first") && strings.Contains(string(seen), "second")
	})
}

// An operations file with one bad operation among good ones: nothing is
// applied, and both the log and an Event on the object name the index of
// the bad operation.
func TestIntegrationFaultBadOperation(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	hooks := t.TempDir()
	writeHook(t, hooks, "bad.sh", ns, faultBinding("bad"), `
cat > "$KUBERNETES_PATCH_PATH" <<'OPS'
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good-0", "namespace": "NAMESPACE"}}}
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "NAMESPACE", "mergePatch": {"data": {"k": "v"}}}
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good-2", "namespace": "NAMESPACE"}}}
OPS`)
	op := startOperator(t, c.Kubeconfig, hooks)
	op.waitRunning(t)
	faultConfigMap(t, c, ns, "trigger", "bad")
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	eventually(t, 30*time.Second, "a log line naming operation 1", func() bool {
		return strings.Contains(op.logs.String(), "operation 1 (MergePatch")
	})
	eventually(t, 30*time.Second, "an Event naming operation 1 on the trigger", func() bool {
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=trigger"})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, "operation 1") {
				return true
			}
		}
		return false
	})
	for _, name := range []string{"good-0", "good-2"} {
		if _, err := cms.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: %v; the file had a bad operation, so nothing of it may be applied", name, err)
		}
	}
}
