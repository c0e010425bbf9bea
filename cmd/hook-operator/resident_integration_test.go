package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// A resident Go hook (testdata/residenthook) under `start` on the local
// cluster: 500 events on one process; SIGKILL of the process mid-run → the
// run is retried on a new process; a hanging run times out and its process
// is replaced; a changed executable is restarted; SIGTERM of the operator
// lets the run in flight finish, then the process exits on EOF of fd 3.
func TestIntegrationResidentHook(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	hooks, marks := t.TempDir(), t.TempDir()
	hookPath := filepath.Join(hooks, "resident")
	if out, err := gobuild.Command("", "-o", hookPath, "./testdata/residenthook").CombinedOutput(); err != nil {
		t.Fatalf("building the resident hook: %v\n%s", err, out)
	}
	o := startObservedEnv(t, bin, c.Kubeconfig, hooks, []string{"RESIDENT_NS=" + ns, "RESIDENT_MARKS=" + marks})
	waitUntil(t, "the operator running", func() bool { return strings.Contains(o.logs.String(), "all bindings started; running") }, o.logs.String)

	read := func(name string) []string {
		data, _ := os.ReadFile(filepath.Join(marks, name))
		return strings.Fields(string(data))
	}
	lines := func(name string) []string {
		data, _ := os.ReadFile(filepath.Join(marks, name))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	recorded := func(name string) (pids []string) {
		for _, l := range lines("records") {
			if n, pid, _ := strings.Cut(l, " "); n == name {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	cms := c.Client.CoreV1().ConfigMaps(ns)
	create := func(name, mode string) {
		_, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"resident": "yes"}},
			Data: map[string]string{"mode": mode}}, metav1.CreateOptions{})
		must(t, err)
	}

	const events = 500
	for i := range events {
		create(fmt.Sprintf("cm-%d", i), "")
	}
	waitUntil(t, "500 events handled", func() bool { return len(lines("records")) >= events }, func() string { return strings.Join(read("starts"), " ") })
	if starts := read("starts"); len(starts) != 1 {
		t.Fatalf("%d events started the hook %d times (%v), want once", events, len(starts), starts)
	}
	first := read("starts")[0]

	// SIGKILL mid-run: the run fails, is retried on a new process.
	create("block", "block")
	waitUntil(t, "the blocking run", func() bool { return len(read("blocked")) == 1 }, o.logs.String)
	if read("blocked")[0] != first {
		t.Errorf("the blocking run ran on %s, not the process that handled the events (%s)", read("blocked")[0], first)
	}
	must(t, killPid(first))
	waitUntil(t, "the killed run retried", func() bool { return len(recorded("block")) == 1 }, o.logs.String)
	second := recorded("block")[0]
	if second == first || len(read("starts")) != 2 {
		t.Errorf("the retry ran on %s after %s was killed, starts %v; want a second process", second, first, read("starts"))
	}
	create("after-kill", "")
	waitUntil(t, "the next event", func() bool { return len(recorded("after-kill")) == 1 }, o.logs.String)
	if got := recorded("after-kill")[0]; got != second {
		t.Errorf("the next event ran on %s, want the new process %s", got, second)
	}

	// A hanging run times out (settings.timeout 3s); its process is replaced.
	create("hang", "hang")
	waitUntil(t, "the timed-out run retried", func() bool { return len(recorded("hang")) == 1 }, o.logs.String)
	third := recorded("hang")[0]
	if third == second || len(read("starts")) != 3 {
		t.Errorf("the retry of the hanging run ran on %s (hung on %s), starts %v; want a new process", third, second, read("starts"))
	}
	if n := o.metric(t, `hook_operator_hook_process_restarts_total{hook="resident",reason="timeout"}`); n != 1 {
		t.Errorf("timeout restarts = %v, want 1", n)
	}
	if n := o.metric(t, `hook_operator_hook_process_restarts_total{hook="resident",reason="crashed"}`); n != 1 {
		t.Errorf("crashed restarts = %v, want 1", n)
	}

	// A changed executable is restarted before its next run.
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(hookPath, later, later))
	create("changed", "")
	waitUntil(t, "the run after the change", func() bool { return len(recorded("changed")) == 1 }, o.logs.String)
	fourth := recorded("changed")[0]
	if fourth == third || len(read("starts")) != 4 {
		t.Errorf("after the executable changed the run ran on %s (before: %s), starts %v; want a new process", fourth, third, read("starts"))
	}
	if n := o.metric(t, `hook_operator_hook_process_recycles_total{hook="resident",reason="changed"}`); n != 1 {
		t.Errorf("changed recycles = %v, want 1", n)
	}

	// SIGTERM while a run is in flight: it finishes, then the process sees
	// EOF on fd 3 and exits, and the operator exits 0.
	create("slow", "slow")
	waitUntil(t, "the slow run", func() bool { return len(read("slow-started")) == 1 }, o.logs.String)
	must(t, o.cmd.Process.Signal(syscall.SIGTERM))
	if err := o.cmd.Wait(); err != nil {
		t.Errorf("the operator exited with %v after SIGTERM, want 0", err)
	}
	if done := read("slow-done"); len(done) != 1 || done[0] != fourth {
		t.Errorf("the run in flight did not finish on %s: slow-done %v", fourth, done)
	}
	if eof := read("eof"); !slices.Contains(eof, fourth) {
		t.Errorf("the process %s did not exit on EOF of fd 3 (eof: %v)", fourth, eof)
	}
}

func killPid(pid string) error {
	var n int
	if _, err := fmt.Sscan(pid, &n); err != nil {
		return err
	}
	return syscall.Kill(n, syscall.SIGKILL)
}
