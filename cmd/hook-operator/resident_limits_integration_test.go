package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/gobuild"
)

// The resident Go hook's process is recycled after residentMaxRuns runs,
// by a reload that changes its configuration, and after a run that leaves
// its RSS above residentMaxMemory (it leaks 64 MiB); each time the next
// run starts a new process.
func TestIntegrationResidentRecycles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	settings := filepath.Join(t.TempDir(), "settings")
	must(t, os.WriteFile(settings, []byte(`,"residentMaxRuns":3`), 0o644))
	if out, err := gobuild.Command("", "-o", filepath.Join(h.hooks, "resident"), "./testdata/residenthook").CombinedOutput(); err != nil {
		t.Fatalf("building the resident hook: %v\n%s", err, out)
	}
	o := h.startEnv(t, []string{"RESIDENT_NS=" + h.ns, "RESIDENT_MARKS=" + marks, "RESIDENT_SETTINGS=" + settings})
	o.waitRunning(t)

	starts := func() []string {
		data, _ := os.ReadFile(filepath.Join(marks, "starts"))
		return strings.Fields(string(data))
	}
	ranOn := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(marks, "records"))
		for _, l := range strings.Split(string(data), "\n") {
			if n, pid, _ := strings.Cut(l, " "); n == name {
				return pid
			}
		}
		return ""
	}
	// handle creates a ConfigMap and waits for its run: one run each.
	handle := func(name, mode string) string {
		t.Helper()
		h.configMap(t, name, map[string]string{"resident": "yes"}, map[string]string{"mode": mode})
		o.waitFor(t, name+"'s run", func() bool { return ranOn(name) != "" })
		return ranOn(name)
	}
	metric := func(reason string) float64 {
		return o.metric(t, `hook_operator_hook_process_recycles_total{hook="resident",reason="`+reason+`"}`)
	}

	// residentMaxRuns 3: runs 1-3 on the first process, run 4 on a new one.
	first := handle("r1", "")
	for _, name := range []string{"r2", "r3"} {
		if pid := handle(name, ""); pid != first {
			t.Errorf("%s ran on %s, want the first process %s", name, pid, first)
		}
	}
	second := handle("r4", "")
	if second == first || len(starts()) != 2 || metric("runs") != 1 {
		t.Errorf("after 3 runs: run 4 on %s (first %s), starts %v, recycles{runs} %v; want a new process", second, first, starts(), metric("runs"))
	}

	// A reload that changes the configuration recycles the process.
	must(t, os.WriteFile(settings, []byte(`,"residentMaxRuns":100,"residentMaxMemory":"48Mi"`), 0o644))
	must(t, os.WriteFile(filepath.Join(h.hooks, "README"), []byte("a change in the folder makes the operator reload it"), 0o644))
	o.waitFor(t, "the reload's recycle", func() bool { return metric("reload") == 1 })
	third := handle("after-reload", "")
	if third == second || len(starts()) != 3 {
		t.Errorf("after the reload: run on %s (before %s), starts %v; want a new process", third, second, starts())
	}

	// A run that leaves the process above residentMaxMemory recycles it.
	if pid := handle("leak", "leak"); pid != third {
		t.Errorf("the leaking run ran on %s, want %s", pid, third)
	}
	fourth := handle("after-leak", "")
	if fourth == third || len(starts()) != 4 || metric("memory") != 1 {
		t.Errorf("after the leak: run on %s (before %s), starts %v, recycles{memory} %v; want a new process", fourth, third, starts(), metric("memory"))
	}
}
