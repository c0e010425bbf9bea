package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// Two operators with the same hooks and --leader-elect: only the one that
// holds the Lease runs hooks; the standby is ready (200 on /readyz) and runs
// nothing; on SIGTERM the leader releases the Lease after its hooks stop, so
// the standby takes over well within the lease duration (15 s), starting
// with every binding's Synchronization.
func TestIntegrationLeaderElection(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	records := t.TempDir()
	hooksFor := func(name string) string {
		dir := t.TempDir()
		writeHook(t, dir, "watch.sh", `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"jqFilter":".metadata.name"}]}'
  exit 0
fi
jq -r '.[] | .type + " " + (.filterResult // "" | tostring)' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
`)
		return dir
	}
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(records, name))
		return string(data)
	}
	args := func(id string) []string {
		return []string{"--leader-elect", "--operator-namespace", ns, "--leader-elect-lease-name", "lease-" + ns, "--leader-elect-identity", id}
	}
	a := startObserved(t, bin, c.Kubeconfig, hooksFor("a"), args("a")...)
	waitUntil(t, "a leading", func() bool { return strings.Contains(a.logs.String(), "leader election: leading") }, a.logs.String)
	b := startObserved(t, bin, c.Kubeconfig, hooksFor("b"), args("b")...)
	waitUntil(t, "b a standby", func() bool { return strings.Contains(b.logs.String(), "leader election: standby") }, b.logs.String)
	waitUntil(t, "b ready as a standby", func() bool { code, _ := b.get(t, "/readyz"); return code == 200 }, b.logs.String)

	_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "a's hook seeing first", func() bool { return strings.Contains(read("a"), "Event first") }, a.logs.String)
	if got := read("b"); got != "" {
		t.Errorf("the standby ran its hook:\n%s", got)
	}
	if got := b.metric(t, `hook_operator_leader{identity="b"}`); got != 0 {
		t.Errorf("b's leader gauge = %v, want 0", got)
	}
	if got := a.metric(t, `hook_operator_leader{identity="a"}`); got != 1 {
		t.Errorf("a's leader gauge = %v, want 1", got)
	}

	start := time.Now()
	must(t, a.cmd.Process.Signal(syscall.SIGTERM))
	waitUntil(t, "b's Synchronization after a stopped", func() bool { return strings.Contains(read("b"), "Synchronization") }, b.logs.String)
	took := time.Since(start)
	t.Logf("handover after SIGTERM: %s", took.Round(10*time.Millisecond))
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("the leader's exit after SIGTERM: %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("the standby took over %s after the leader's SIGTERM; the released Lease should be taken within a retry period (2 s), not after the lease duration (15 s)", took)
	}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "second"}}, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "b's hook seeing second", func() bool { return strings.Contains(read("b"), "Event second") }, b.logs.String)
	if strings.Contains(read("a"), "second") {
		t.Errorf("the stopped leader ran for an object made after it stopped")
	}
}
