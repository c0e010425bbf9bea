package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// Two operators with the same hooks and --leader-elect, each with no more
// rights than `hook-operator rbac --leader-elect` grants: only the one that
// holds the Lease runs hooks; the standby is ready (200 on /readyz) and runs
// nothing; on SIGTERM the leader releases the Lease after its hooks stop, and
// the standby, watching the Lease, takes it at once (not at its next try,
// nor after the lease duration of 15 s), starting with every binding's
// Synchronization.
func TestIntegrationLeaderElection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	hooksFor := func(name string) string {
		dir := t.TempDir()
		writeHook(t, dir, "watch.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"jqFilter":".metadata.name"}]}`, `set -euo pipefail
jq -r '.[] | .type + " " + (.filterResult // "" | tostring)' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
`))
		return dir
	}
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(records, name))
		return string(data)
	}
	hooksA := hooksFor("a")
	kubeconfig := leastPrivilege(t, h.c, h.bin, hooksA, h.ns, "--leader-elect", "--leader-elect-lease-name", "lease-"+h.ns)
	a := startOperator(t, hooksA, operatorOpts{kubeconfig: kubeconfig, flags: electionArgs(h.ns, "a")})
	a.waitRunning(t)
	b := startOperator(t, hooksFor("b"), operatorOpts{kubeconfig: kubeconfig, flags: electionArgs(h.ns, "b")})
	b.waitLog(t, "leader election: standby")
	b.waitReady(t)
	if out := b.debug(t, "role"); !strings.Contains(out, "standby") || !strings.Contains(out, "b") {
		t.Errorf("debug role of the standby:\n%s", out)
	}
	if out := a.debug(t, "role"); !strings.Contains(out, "leader") {
		t.Errorf("debug role of the leader:\n%s", out)
	}

	h.configMap(t, "first", nil, nil)
	a.waitFor(t, "a's hook seeing first", func() bool { return strings.Contains(read("a"), "Event first") })
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
	b.waitFor(t, "b's Synchronization after a stopped", func() bool { return strings.Contains(read("b"), "Synchronization") })
	took := time.Since(start)
	t.Logf("handover after SIGTERM: %s", took.Round(10*time.Millisecond))
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("the leader's exit after SIGTERM: %v", err)
	}
	if took > 10*time.Second {
		t.Errorf("the standby took over %s after the leader's SIGTERM; the released Lease should be taken at once, not after the lease duration (15 s)", took)
	}
	if strings.Contains(a.logs.String()+b.logs.String(), "forbidden") {
		t.Errorf("an operator was refused something that hook-operator rbac did not grant:\n%s\n%s", a.logs.String(), b.logs.String())
	}
	h.configMap(t, "second", nil, nil)
	b.waitFor(t, "b's hook seeing second", func() bool { return strings.Contains(read("b"), "Event second") })
	if strings.Contains(read("a"), "second") {
		t.Errorf("the stopped leader ran for an object made after it stopped")
	}
}

// A leader killed with SIGKILL (no release) during a churn of 500 objects:
// the standby, watching the Lease, releases it the moment it expires (the
// lease duration after the last renewal it saw) and takes it, and starts
// with every binding's Synchronization, which holds every object: none is
// lost.
//
// Objects with the hook's finalizer that are deleted during the gap wait for
// the new leader and reach its hook as Finalize, after which they are gone.
func TestIntegrationLeaderKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	hooksFor := func(name string) string {
		dir := t.TempDir()
		writeHook(t, dir, "watch.sh", bashHook(`{"configVersion":"v1","kubernetes":[
    {"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"jqFilter":".metadata.name","labelSelector":{"matchLabels":{"churn":"yes"}}},
    {"name":"held","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"labelSelector":{"matchLabels":{"held":"yes"}},
     "executeHookOnSynchronization":false,"finalizer":"test.hook-operator.dev/held"}]}`, `set -euo pipefail
jq -r '.[] | select(.binding == "cms") | if .type == "Synchronization" then .objects[].filterResult else .filterResult end' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
jq -r '.[] | select(.watchEvent == "Finalize") | .object.metadata.name' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name+".finalized")+`
`))
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
	a := startOperator(t, hooksFor("a"), operatorOpts{flags: electionArgs(h.ns, "a")})
	a.waitLog(t, "leader election: leading")
	b := startOperator(t, hooksFor("b"), operatorOpts{flags: electionArgs(h.ns, "b")})
	b.waitLog(t, "leader election: standby")

	create := func(from, to int) {
		for i := from; i < to; i++ {
			h.configMap(t, "cm-"+strconv.Itoa(i), map[string]string{"churn": "yes"}, nil)
		}
	}
	cms := h.c.Client.CoreV1().ConfigMaps(h.ns)
	held := []string{"held-0", "held-1", "held-2"}
	for _, name := range held {
		h.configMap(t, name, map[string]string{"held": "yes"}, nil)
	}
	a.waitFor(t, "a's finalizer on the held objects", func() bool {
		for _, name := range held {
			cm, err := cms.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || len(cm.Finalizers) == 0 {
				return false
			}
		}
		return true
	})
	create(0, 250)
	must(t, a.cmd.Process.Kill())
	killed := time.Now()
	_ = a.cmd.Wait()
	for _, name := range held {
		must(t, cms.Delete(context.Background(), name, metav1.DeleteOptions{}))
	}
	create(250, 500)
	b.waitFor(t, "b's first run after the kill", func() bool { return len(seen("b")) > 0 })
	t.Logf("failover after SIGKILL: %s", time.Since(killed).Round(10*time.Millisecond))
	if !strings.Contains(b.logs.String(), "the Lease expired") || !strings.Contains(b.logs.String(), "took the Lease") {
		t.Errorf("b did not see the Lease expire through its watch and take it then (it waited for its next retry):\n%s", b.logs.String())
	}
	waitUntil(t, "b seeing all 500 objects", func() bool { return len(seen("b")) == 500 }, func() string {
		return fmt.Sprintf("b saw %d of 500\n%s", len(seen("b")), b.logs.String())
	})
	b.waitFor(t, "the held objects finalized by b and gone", func() bool {
		list, err := cms.List(context.Background(), metav1.ListOptions{LabelSelector: "held=yes"})
		return err == nil && len(list.Items) == 0
	})
	if got := seen("b.finalized"); len(got) != len(held) {
		t.Errorf("b's Finalize runs were for %v, want %v", got, held)
	}
	if got := seen("a.finalized"); len(got) != 0 {
		t.Errorf("a finalized %v before it was killed, before any deletion", got)
	}
}

// A leader cut off from the API server (its own connection only) cannot
// renew: within the renew deadline it stops its running hooks at once, not
// after the grace period, and exits, before the lease duration could give
// the Lease to another replica.
func TestIntegrationLeaderLosesAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p, kubeconfig := proxiedKubeconfig(t, h.c.Kubeconfig)

	marks := t.TempDir()
	h.hook(t, "slow.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false,"namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}}}]}`, `echo $$ >`+marks+`/pid
sleep 120
`))
	o := startOperator(t, h.hooks, operatorOpts{kubeconfig: kubeconfig, flags: []string{"--leader-elect", "--operator-namespace", h.ns,
		"--leader-elect-lease-name", "lease-" + h.ns, "--leader-elect-lease-duration", "10s", "--leader-elect-renew-deadline", "5s",
		"--leader-elect-retry-period", "1s", "--shutdown-grace-period", "60s"}})
	// Its bindings listed, so that the object below comes as an Event.
	o.waitRunning(t)
	h.configMap(t, "slow", nil, nil)
	var pid int
	o.waitFor(t, "the slow hook running", func() bool {
		data, err := os.ReadFile(filepath.Join(marks, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})

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

// electionArgs are the start flags of replica id of a test's two operators:
// leader election with a Lease of the test's namespace.
func electionArgs(ns, id string) []string {
	return []string{"--leader-elect", "--operator-namespace", ns, "--leader-elect-lease-name", "lease-" + ns, "--leader-elect-identity", id}
}

// leastPrivilege applies what `hook-operator rbac` prints for hooksDir and
// the extra arguments, bound to the ServiceAccount "op" of ns, and returns a
// kubeconfig that acts as that ServiceAccount (impersonated), so that the
// operator runs with those rights and no more. The cluster-wide objects go
// when the test ends.
func leastPrivilege(t *testing.T, c *testcluster.Cluster, bin, hooksDir, ns string, extra ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"rbac", "--hooks-dir", hooksDir, "--kubeconfig", c.Kubeconfig,
		"--namespace", ns, "--service-account", "op", "--name", "test-" + ns}, extra...)...).Output()
	if err != nil {
		t.Fatalf("hook-operator rbac: %v", err)
	}
	if msg, err := kubectlApply(c.Kubeconfig, string(out)); err != nil {
		t.Fatalf("applying the RBAC: %v\n%s", err, msg)
	}
	t.Cleanup(func() {
		cmd := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "delete", "--ignore-not-found", "-f", "-")
		cmd.Stdin = bytes.NewReader(out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("deleting the RBAC: %v\n%s", err, msg)
		}
	})
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	must(t, err)
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + ns + ":op"
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, kubeconfig))
	return kubeconfig
}
