package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/queue"
)

// What holds start-up is named: the hook, binding and queue of each run it
// waits for, how many times a failed one failed, when it is retried, and
// the command that drops it; a run waiting behind another names that one.
func TestDescribeStartupRun(t *testing.T) {
	now := time.Now()
	held := queue.TaskState{Hook: "fails.sh", Bindings: []string{binding.OnStartup}, Attempts: 12,
		LastError: "hook fails.sh: exit code 1; stderr ends with:\nsecret-ish output", DropCommand: "hook-operator debug drop main fails.sh"}
	qs := []queue.QueueState{
		{Name: "main", RetryAt: now.Add(3 * time.Second), Pending: []queue.TaskState{held, {Hook: "ok.sh", Bindings: []string{"cms"}}}},
		{Name: "other", Running: &queue.TaskState{Hook: "slow.sh", Bindings: []string{"pods"}, Started: now.Add(-time.Minute)}},
	}
	for _, tt := range []struct {
		run          startupRun
		want, absent []string
	}{
		{startupRun{"fails.sh", binding.OnStartup, "main"},
			[]string{"fails.sh's onStartup run (queue main), which failed 12 time(s)", "last error: hook fails.sh: exit code 1 (its stderr is in the log)", "retried in 3s", "`hook-operator debug drop main fails.sh` drops it"},
			[]string{"secret-ish"}},
		{startupRun{"ok.sh", "cms", "main"},
			[]string{"ok.sh's Synchronization run of binding cms (queue main), queued behind fails.sh's run, which failed 12 time(s)", "`hook-operator debug drop main fails.sh` drops it"}, nil},
		{startupRun{"slow.sh", "pods", "other"}, []string{"slow.sh's Synchronization run of binding pods (queue other), running since 1m0s ago"}, []string{"drops"}},
		{startupRun{"new.sh", "x", "nosuch"}, []string{"new.sh's Synchronization run of binding x (queue nosuch), not queued yet"}, nil},
	} {
		got := describeStartupRun(tt.run, qs, now)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q\nwant it to say %q", tt.run, got, w)
			}
		}
		for _, a := range tt.absent {
			if strings.Contains(got, a) {
				t.Errorf("%v: %q\nshould not say %q", tt.run, got, a)
			}
		}
	}
}

// startupRuns lists each run once until its Done, which may come twice.
func TestStartupRunsList(t *testing.T) {
	var s startupRuns
	changed := s.changes()
	end := s.add(startupRun{"a.sh", binding.OnStartup, "main"})
	select {
	case <-changed:
	default:
		t.Error("add did not signal a change")
	}
	s.add(startupRun{"b.sh", "cms", "main"})
	if got := s.list(); len(got) != 2 || got[0].hook != "a.sh" {
		t.Errorf("list = %v, want a.sh then b.sh", got)
	}
	end(nil)
	end(queue.ErrDropped)
	if got := s.list(); len(got) != 1 || got[0].hook != "b.sh" {
		t.Errorf("after a.sh's Done (twice): %v, want b.sh alone", got)
	}
}
