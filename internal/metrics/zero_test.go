package metrics

import (
	"strings"
	"testing"
)

// The counters that alerts take increase() of are served at 0 before their
// first event: reloads and recovered panics from the start, a resource's
// watch errors and restarts from its first watch.
func TestCountersStartAtZero(t *testing.T) {
	m := New("p_")
	m.WatchStarted("configmaps")
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`p_hooks_reload_total{result="invalid"} 0`,
		`p_hooks_reload_total{result="applied"} 0`,
		`p_panics_recovered_total{where="run"} 0`,
		`p_panics_recovered_total{where="webhook"} 0`,
		`p_watch_errors_total{resource="configmaps"} 0`,
		`p_watch_restarts_total{reason="idle",resource="configmaps"} 0`,
		`p_watch_restarts_total{reason="error",resource="configmaps"} 0`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	m.WatchRestart("configmaps", "idle")
	b.Reset()
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `p_watch_restarts_total{reason="idle",resource="configmaps"} 1`+"\n") {
		t.Errorf("the restart was not counted on the zero series:\n%s", b.String())
	}
	var nilMetrics *Metrics
	nilMetrics.WatchStarted("configmaps")
}
