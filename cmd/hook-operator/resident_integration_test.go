package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/gobuild"
)

// A resident Go hook (testdata/residenthook) under `start` on the local
// cluster: 500 events on one process; SIGKILL of the process mid-run → the
// run is retried on a new process; a hanging run times out and its process
// is replaced; a changed executable is restarted; SIGTERM of the operator
// lets the run in flight finish, then the process exits on EOF of fd 3.
func TestIntegrationResidentHook(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	hookPath := filepath.Join(h.hooks, "resident")
	if out, err := gobuild.Command("", "-o", hookPath, "./testdata/residenthook").CombinedOutput(); err != nil {
		t.Fatalf("building the resident hook: %v\n%s", err, out)
	}
	o := h.startEnv(t, []string{"RESIDENT_NS=" + h.ns, "RESIDENT_MARKS=" + marks})
	o.waitRunning(t)

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
	create := func(name, mode string) {
		h.configMap(t, name, map[string]string{"resident": "yes"}, map[string]string{"mode": mode})
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
	o.waitFor(t, "the blocking run", func() bool { return len(read("blocked")) == 1 })
	if read("blocked")[0] != first {
		t.Errorf("the blocking run ran on %s, not the process that handled the events (%s)", read("blocked")[0], first)
	}
	must(t, killPid(first))
	o.waitFor(t, "the killed run retried", func() bool { return len(recorded("block")) == 1 })
	second := recorded("block")[0]
	if second == first || len(read("starts")) != 2 {
		t.Errorf("the retry ran on %s after %s was killed, starts %v; want a second process", second, first, read("starts"))
	}
	create("after-kill", "")
	o.waitFor(t, "the next event", func() bool { return len(recorded("after-kill")) == 1 })
	if got := recorded("after-kill")[0]; got != second {
		t.Errorf("the next event ran on %s, want the new process %s", got, second)
	}

	// A hanging run times out (settings.timeout 3s); its process is replaced.
	create("hang", "hang")
	o.waitFor(t, "the timed-out run retried", func() bool { return len(recorded("hang")) == 1 })
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
	o.waitFor(t, "the run after the change", func() bool { return len(recorded("changed")) == 1 })
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
	o.waitFor(t, "the slow run", func() bool { return len(read("slow-started")) == 1 })
	if err := o.stop(t); err != nil {
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
