package main_test

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
	waitUntil(t, "a leading and running", func() bool { return strings.Contains(a.logs.String(), "all bindings started; running") }, a.logs.String)
	b := startObserved(t, bin, c.Kubeconfig, hooksFor("b"), args("b")...)
	waitUntil(t, "b a standby", func() bool { return strings.Contains(b.logs.String(), "leader election: standby") }, b.logs.String)
	waitUntil(t, "b ready as a standby", func() bool { code, _ := b.get(t, "/readyz"); return code == 200 }, b.logs.String)
	if out := b.debug(t, "role"); !strings.Contains(out, "standby") || !strings.Contains(out, "b") {
		t.Errorf("debug role of the standby:\n%s", out)
	}
	if out := a.debug(t, "role"); !strings.Contains(out, "leader") {
		t.Errorf("debug role of the leader:\n%s", out)
	}

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

// A leader killed with SIGKILL (no release) during a churn of 500 objects:
// the standby takes the Lease once it expires and starts with every
// binding's Synchronization, which holds every object: none is lost.
func TestIntegrationLeaderKilled(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	records := t.TempDir()
	hooksFor := func(name string) string {
		dir := t.TempDir()
		writeHook(t, dir, "watch.sh", `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"jqFilter":".metadata.name","labelSelector":{"matchLabels":{"churn":"yes"}}}]}'
  exit 0
fi
jq -r '.[] | if .type == "Synchronization" then .objects[].filterResult else .filterResult end' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
`)
		return dir
	}
	seen := func(name string) map[string]bool {
		data, _ := os.ReadFile(filepath.Join(records, name))
		out := map[string]bool{}
		for _, l := range strings.Fields(string(data)) {
			out[l] = true
		}
		return out
	}
	args := func(id string) []string {
		return []string{"--leader-elect", "--operator-namespace", ns, "--leader-elect-lease-name", "lease-" + ns, "--leader-elect-identity", id}
	}
	a := startObserved(t, bin, c.Kubeconfig, hooksFor("a"), args("a")...)
	waitUntil(t, "a leading", func() bool { return strings.Contains(a.logs.String(), "leader election: leading") }, a.logs.String)
	b := startObserved(t, bin, c.Kubeconfig, hooksFor("b"), args("b")...)
	waitUntil(t, "b a standby", func() bool { return strings.Contains(b.logs.String(), "leader election: standby") }, b.logs.String)

	create := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "cm-" + strconv.Itoa(i), Labels: map[string]string{"churn": "yes"}}}, metav1.CreateOptions{})
			must(t, err)
		}
	}
	create(0, 250)
	must(t, a.cmd.Process.Kill())
	killed := time.Now()
	_ = a.cmd.Wait()
	create(250, 500)
	waitUntil(t, "b's first run after the kill", func() bool { return len(seen("b")) > 0 }, b.logs.String)
	t.Logf("failover after SIGKILL: %s", time.Since(killed).Round(10*time.Millisecond))
	waitUntil(t, "b seeing all 500 objects", func() bool { return len(seen("b")) == 500 }, func() string {
		return fmt.Sprintf("b saw %d of 500\n%s", len(seen("b")), b.logs.String())
	})
}

// A leader cut off from the API server (its own connection only) cannot
// renew: within the renew deadline it stops its running hooks at once, not
// after the grace period, and exits, before the lease duration could give
// the Lease to another replica.
func TestIntegrationLeaderLosesAPIServer(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	p, kubeconfig := proxiedKubeconfig(t, c.Kubeconfig)

	hooks, marks := t.TempDir(), t.TempDir()
	writeHook(t, hooks, "slow.sh", fmt.Sprintf(`#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false,"namespace":{"nameSelector":{"matchNames":["%s"]}}}]}'
  exit 0
fi
echo $$ >%s/pid
sleep 120
`, ns, marks))
	o := startObserved(t, bin, kubeconfig, hooks, "--leader-elect", "--operator-namespace", ns, "--leader-elect-lease-name", "lease-"+ns,
		"--leader-elect-lease-duration", "10s", "--leader-elect-renew-deadline", "5s", "--leader-elect-retry-period", "1s",
		"--shutdown-grace-period", "60s")
	// Its bindings listed, so that the object below comes as an Event.
	waitUntil(t, "leading and running", func() bool { return strings.Contains(o.logs.String(), "all bindings started; running") }, o.logs.String)
	_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{})
	must(t, err)
	var pid int
	waitUntil(t, "the slow hook running", func() bool {
		data, err := os.ReadFile(filepath.Join(marks, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	}, o.logs.String)

	p.stop()
	cut := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- o.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("stopped %s after the API server went away (renew deadline 5s, lease duration 10s)", time.Since(cut).Round(10*time.Millisecond))
		if err == nil || !strings.Contains(o.logs.String(), "the Lease could not be renewed") {
			t.Errorf("exit %v; want a failure that says the Lease could not be renewed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the leader still runs 30 s after losing the API server")
	}
	if d := time.Since(cut); d > 10*time.Second {
		t.Errorf("the leader stopped %s after it lost the API server, later than the lease duration (10 s)", d)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the hook (pid %d) still runs after the leader stopped; it must be stopped at once, not after the 60 s grace period", pid)
	}
}
