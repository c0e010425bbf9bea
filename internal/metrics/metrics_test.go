package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// served is the text m serves at its next read.
func served(t *testing.T, m *Metrics) string {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wantLines reports each of lines that is not a whole line of text.
func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, line := range lines {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("no line %q in:\n%s", line, text)
		}
	}
}

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
	labels := `{binding="pods",hook="a.sh",queue="main"}`
	wantLines(t, served(t, m), "r_hook_runs_total"+labels+" 3", "r_hook_run_errors_total"+labels+" 1",
		"r_hook_run_allowed_errors_total"+labels+" 1", "r_hook_run_seconds_count"+labels+" 3",
		"r_hook_run_user_cpu_seconds_total"+labels+" 0.75", "r_hook_run_max_rss_bytes"+labels+" 4096")
	var nilMetrics *Metrics
	nilMetrics.RecordRun(ok)
}

// The counters that alerts take increase() of are served at 0 before their
// first event: reloads and recovered panics from the start, a resource's
// watch errors and restarts from its first watch.
func TestCountersStartAtZero(t *testing.T) {
	m := New("p_")
	m.WatchStarted("configmaps")
	wantLines(t, served(t, m),
		`p_hooks_reload_total{result="invalid"} 0`,
		`p_hooks_reload_total{result="applied"} 0`,
		`p_panics_recovered_total{where="run"} 0`,
		`p_panics_recovered_total{where="webhook"} 0`,
		`p_watch_errors_total{resource="configmaps"} 0`,
		`p_watch_restarts_total{reason="idle",resource="configmaps"} 0`,
		`p_watch_restarts_total{reason="error",resource="configmaps"} 0`,
	)
	m.WatchRestart("configmaps", "idle")
	if text := served(t, m); !strings.Contains(text, `p_watch_restarts_total{reason="idle",resource="configmaps"} 1`+"\n") {
		t.Errorf("the restart was not counted on the zero series:\n%s", text)
	}
	var nilMetrics *Metrics
	nilMetrics.WatchStarted("configmaps")
}

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
	text := served(t, m)
	wantLines(t, text, "# TYPE p_panics_recovered_total counter", `p_panics_recovered_total{where="run"} 2`, `p_panics_recovered_total{where="webhook"} 1`,
		`p_webhook_rejected_requests_total{listener="admission",reason="panic"} 1`)
	// Four series: run, admission, conversion and webhook, the two not
	// counted at 0.
	if strings.Contains(text, `p_panics_recovered_total{where="busy"}`) || strings.Count(text, "p_panics_recovered_total{") != 4 {
		t.Errorf("a rejection that was no panic counted as one:\n%s", text)
	}
	var nilMetrics *Metrics
	nilMetrics.PanicRecovered("run")
}

// Each review of the secure metrics listener counts by review and result.
func TestMetricsReviewsCounted(t *testing.T) {
	m := New("p_")
	m.MetricsReview("token", "denied")
	m.MetricsReview("token", "cached")
	m.MetricsReview("token", "cached")
	wantLines(t, served(t, m), `p_metrics_reviews_total{result="cached",review="token"} 2`, `p_metrics_reviews_total{result="denied",review="token"} 1`)
	var nilMetrics *Metrics
	nilMetrics.MetricsReview("token", "allowed")
}

// Process starts, restarts and recycles are counted per hook (and reason).
func TestHookProcessCounters(t *testing.T) {
	m := New("p_")
	m.ProcessStarted("a.sh")
	m.ProcessStarted("a.sh")
	m.ProcessRestarted("a.sh", "crashed")
	m.ProcessRecycled("a.sh", "memory")
	wantLines(t, served(t, m),
		`p_hook_process_starts_total{hook="a.sh"} 2`,
		`p_hook_process_restarts_total{hook="a.sh",reason="crashed"} 1`,
		`p_hook_process_recycles_total{hook="a.sh",reason="memory"} 1`,
	)
	var nilMetrics *Metrics
	nilMetrics.ProcessStarted("a.sh")
	nilMetrics.ProcessRestarted("a.sh", "timeout")
	nilMetrics.ProcessRecycled("a.sh", "runs")
}
