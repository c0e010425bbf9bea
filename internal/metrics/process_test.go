package metrics

import (
	"strings"
	"testing"
)

// Process starts, restarts and recycles are counted per hook (and reason).
func TestHookProcessCounters(t *testing.T) {
	m := New("p_")
	m.ProcessStarted("a.sh")
	m.ProcessStarted("a.sh")
	m.ProcessRestarted("a.sh", "crashed")
	m.ProcessRecycled("a.sh", "memory")
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`p_hook_process_starts_total{hook="a.sh"} 2`,
		`p_hook_process_restarts_total{hook="a.sh",reason="crashed"} 1`,
		`p_hook_process_recycles_total{hook="a.sh",reason="memory"} 1`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	var nilMetrics *Metrics
	nilMetrics.ProcessStarted("a.sh")
	nilMetrics.ProcessRestarted("a.sh", "timeout")
	nilMetrics.ProcessRecycled("a.sh", "runs")
}
