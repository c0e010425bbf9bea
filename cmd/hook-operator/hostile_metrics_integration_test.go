package main_test

import (
	"strings"
	"testing"
)

// A hook that writes 20,000 metric series with fresh label values every
// second (issue 43: 1.76 GB after 60 s, and an empty /metrics) against a
// real operator on the local cluster: the hook holds at most the per-hook
// cap (1,000 by default), the overflow is counted per hook and logged
// once, the operator's own metrics are served all along, and its memory
// stays under 256 MB.
func TestIntegrationHostileMetricsSeriesFlood(t *testing.T) {
	h := newHarness(t)
	h.hook(t, "flood.sh", bashHook(`{"configVersion":"v1","schedule":[{"name":"every-second","crontab":"* * * * * *"}]}`, `
run=$(date +%s%N)
awk -v run="$run" 'BEGIN { for (i = 0; i < 20000; i++) printf "{\"name\":\"flood_ids\",\"set\":1,\"labels\":{\"id\":\"%s-%d\"}}\n", run, i }' >> "$METRICS_PATH"
`))
	o := h.start(t)

	runs := func() float64 {
		return o.metric(t, `hook_operator_hook_runs_total{binding="every-second",hook="flood.sh",queue="main"}`)
	}
	o.waitFor(t, "ten runs of the flooding hook", func() bool { return runs() >= 10 })

	code, page := o.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics answers %d", code)
	}
	for _, own := range []string{"hook_operator_hook_runs_total{", "hook_operator_panics_recovered_total{", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(page, "\n"+own) {
			t.Errorf("/metrics lacks the operator's own %s", own)
		}
	}
	if n := strings.Count(page, "\nflood_ids{"); n != 1000 {
		t.Errorf("/metrics serves %d series of the hook, want the per-hook cap of 1000", n)
	}
	_, hooksPage := o.get(t, "/metrics/hooks")
	if n := strings.Count(hooksPage, "\nflood_ids{"); n != 1000 {
		t.Errorf("/metrics/hooks serves %d series of the hook, want 1000", n)
	}
	// At least 9 runs of 20,000 lines each were over the cap.
	if d := o.metric(t, `hook_operator_hook_metrics_dropped_total{hook="flood.sh",reason="per_hook_limit"}`); d < 9*20000 {
		t.Errorf("hook_metrics_dropped_total is %v, want at least 180000", d)
	}
	if n := strings.Count(o.logs.String(), "new series of flood_ids dropped"); n != 1 {
		t.Errorf("the overflow was logged %d times, want once", n)
	}
	if rss := o.metric(t, "process_resident_memory_bytes"); rss <= 0 || rss > 256<<20 {
		t.Errorf("the operator's RSS is %.0f MB, want at most 256 MB", rss/(1<<20))
	} else {
		t.Logf("RSS after %v runs of 20,000 fresh series: %.0f MB", runs(), rss/(1<<20))
	}
}
