package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A finished run moves the run series of its hook, binding and queue: a
// failure counts as an error, or as an allowed one with allowFailure, and
// an unknown peak memory (0) leaves the gauge as it was.
func TestRecordRun(t *testing.T) {
	m := New("r_")
	ok := HookRun{Hook: "a.sh", Binding: "pods", Queue: "main", Duration: 2 * time.Second, UserCPU: 250 * time.Millisecond,
		SystemCPU: 100 * time.Millisecond, MaxRSS: 4096}
	m.RecordRun(ok)
	failed := ok
	failed.Err, failed.MaxRSS = errors.New("exit status 1"), 0
	m.RecordRun(failed)
	failed.Allowed = true
	m.RecordRun(failed)
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	labels := `{binding="pods",hook="a.sh",queue="main"}`
	for _, line := range []string{"r_hook_runs_total" + labels + " 3", "r_hook_run_errors_total" + labels + " 1",
		"r_hook_run_allowed_errors_total" + labels + " 1", "r_hook_run_seconds_count" + labels + " 3",
		"r_hook_run_user_cpu_seconds_total" + labels + " 0.75", "r_hook_run_max_rss_bytes" + labels + " 4096"} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	var nilMetrics *Metrics
	nilMetrics.RecordRun(ok)
}
