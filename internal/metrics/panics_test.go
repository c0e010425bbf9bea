package metrics

import (
	"strings"
	"testing"
)

// Every recovered panic counts in panics_recovered_total by where it was
// recovered; a webhook request answered with reason "panic" counts there
// too (where "webhook"), besides webhook_rejected_requests_total, and
// other rejections do not.
func TestPanicsRecovered(t *testing.T) {
	m := New("p_")
	m.PanicRecovered("run")
	m.PanicRecovered("run")
	m.WebhookRejected("admission", WebhookPanic)
	m.WebhookRejected("admission", "busy")
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"# TYPE p_panics_recovered_total counter", `p_panics_recovered_total{where="run"} 2`, `p_panics_recovered_total{where="webhook"} 1`,
		`p_webhook_rejected_requests_total{listener="admission",reason="panic"} 1`} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	// Four series: run, admission, conversion and webhook, the two not
	// counted at 0.
	if strings.Contains(b.String(), `p_panics_recovered_total{where="busy"}`) || strings.Count(b.String(), "p_panics_recovered_total{") != 4 {
		t.Errorf("a rejection that was no panic counted as one:\n%s", b.String())
	}
	var nilMetrics *Metrics
	nilMetrics.PanicRecovered("run")
}
