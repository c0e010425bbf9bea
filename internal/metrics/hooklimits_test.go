package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

// freshSeries returns n lines of one gauge, each with a label value not
// seen before (from is the first), as a hook writing an ID per run does.
func freshSeries(name string, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"name":%q,"set":1,"labels":{"id":"%d"}}`+"\n", name, i)
	}
	return b.String()
}

// countSeries counts the sample lines of name on a page.
func countSeries(page, name string) int {
	return strings.Count(page, "\n"+name+"{")
}

// A hook writing a fresh label value on every run holds at most the
// per-hook cap; all hooks together at most the total cap. The overflow is
// counted per hook and reason and logged once per hook, and the series
// held go on being updated.
func TestHookMetricsSeriesCapped(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	var warnings []string
	m.Hooks.SetLimits(metrics.HookLimits{PerHook: 100, Total: 150, Warn: func(msg string) { warnings = append(warnings, msg) }})
	for run := range 10 {
		apply(t, m.Hooks, "fresh.sh", freshSeries("ids", run*50, 50))
	}
	page := "\n" + serve(t, m.HooksHandler())
	if n := countSeries(page, "ids"); n != 100 {
		t.Errorf("fresh.sh holds %d series, want the cap of 100", n)
	}
	// The series held are still updated.
	apply(t, m.Hooks, "fresh.sh", `{"name":"ids","set":7,"labels":{"id":"3"}}`)
	if page := serve(t, m.HooksHandler()); !strings.Contains(page, `ids{hook="fresh.sh",id="3"} 7`) {
		t.Errorf("a held series was not updated:\n%.300s", page)
	}
	// A second hook gets what is left of the total: 50.
	apply(t, m.Hooks, "other.sh", freshSeries("other", 0, 80))
	page = "\n" + serve(t, m.HooksHandler())
	if n := countSeries(page, "other"); n != 50 {
		t.Errorf("other.sh holds %d series, want the 50 the total cap leaves", n)
	}
	own := serve(t, m.Handler())
	for _, line := range []string{
		`hook_operator_hook_metrics_dropped_total{hook="fresh.sh",reason="per_hook_limit"} 400`,
		`hook_operator_hook_metrics_dropped_total{hook="other.sh",reason="total_limit"} 30`,
	} {
		if !strings.Contains(own, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "hook fresh.sh: $METRICS_PATH: new series of ids dropped: the hook holds 100 series, the most --hook-metrics-max-series-per-hook allows") ||
		!strings.Contains(warnings[0], "hook_operator_hook_metrics_dropped_total") ||
		!strings.Contains(warnings[1], "hook other.sh: $METRICS_PATH: new series of other dropped: the hooks hold 150 series, the most --hook-metrics-max-series allows") {
		t.Errorf("want one warning per hook, got %d:\n%s", len(warnings), strings.Join(warnings, "\n"))
	}
}

// Series dropped with their group make room again: a hook that replaces
// its series through a group each run stays under the cap and loses
// nothing.
func TestHookMetricsGroupsFreeTheirSeries(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	m.Hooks.SetLimits(metrics.HookLimits{PerHook: 60, Total: 60})
	for run := range 20 {
		var b strings.Builder
		for i := range 50 {
			fmt.Fprintf(&b, `{"name":"objects","set":1,"group":"g","labels":{"obj":"run%d-%d"}}`+"\n", run, i)
		}
		ops := parse(t, b.String())
		m.Hooks.Apply("grouped.sh", ops)
	}
	page := "\n" + serve(t, m.HooksHandler())
	if n := countSeries(page, "objects"); n != 50 {
		t.Errorf("%d series, want the last run's 50", n)
	}
	if own := serve(t, m.Handler()); strings.Contains(own, "hook_metrics_dropped_total{") {
		t.Errorf("series were dropped although groups freed their room:\n%s", own)
	}
	m.Hooks.Apply("grouped.sh", parse(t, `{"action":"expire","group":"g"}`))
	m.Hooks.Apply("second.sh", parse(t, freshSeries("second", 0, 60)))
	if n := countSeries("\n"+serve(t, m.HooksHandler()), "second"); n != 60 {
		t.Errorf("after expire, second.sh holds %d series, want 60: expire did not give the room back", n)
	}
}

// A series whose labels or buckets are huge is dropped: the caps on the
// number of series then bound memory.
func TestHookMetricsLargeSeriesDropped(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	long := strings.Repeat("x", metrics.MaxSeriesBytes)
	buckets := make([]string, 1000)
	for i := range buckets {
		buckets[i] = fmt.Sprint(i)
	}
	m.Hooks.Apply("big.sh", parse(t, `{"name":"long","set":1,"labels":{"v":"`+long+`"}}
{"name":"wide","action":"observe","value":1,"buckets":[`+strings.Join(buckets, ",")+`]}
{"name":"small","set":1,"labels":{"v":"short"}}`))
	page := serve(t, m.HooksHandler())
	if strings.Contains(page, "long{") || strings.Contains(page, "wide_bucket{") || !strings.Contains(page, `small{hook="big.sh",v="short"} 1`) {
		t.Errorf("serves:\n%.500s", page)
	}
	if own := serve(t, m.Handler()); !strings.Contains(own, `hook_operator_hook_metrics_dropped_total{hook="big.sh",reason="too_large"} 2`+"\n") {
		t.Errorf("the large series are not counted")
	}
}

// metrics.New caps hooks by default: the flags' defaults hold without
// SetLimits.
func TestHookMetricsCappedByDefault(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	for run := range 12 {
		m.Hooks.Apply(fmt.Sprintf("h%d.sh", run), parse(t, freshSeries("ids", 0, 1500)))
	}
	page := "\n" + serve(t, m.HooksHandler())
	if n := countSeries(page, "ids"); n != metrics.DefaultMaxSeries {
		t.Errorf("%d series, want the default total cap %d", n, metrics.DefaultMaxSeries)
	}
	if n := strings.Count(page, `ids{hook="h0.sh"`); n != metrics.DefaultMaxSeriesPerHook {
		t.Errorf("h0.sh holds %d series, want the default per-hook cap %d", n, metrics.DefaultMaxSeriesPerHook)
	}
}

// /metrics sends the operator's own families before any hook's: a scrape
// cut short while the hooks' part is written (a deadline, a full
// connection) still has all of them, whatever names the hooks use.
func TestMetricsServesOwnFamiliesFirst(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	m.Hooks.SetLimits(metrics.HookLimits{})
	// "aaa" sorts before every family of the operator.
	m.Hooks.Apply("loud.sh", parse(t, freshSeries("aaa_first", 0, 20000)))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	page := rec.Body.String()
	hooks := strings.Index(page, "# HELP aaa_first ")
	if hooks < 0 {
		t.Fatalf("the hook's family is not served")
	}
	for _, f := range []string{"# TYPE go_goroutines gauge", "# TYPE process_open_fds gauge",
		"# TYPE hook_operator_hooks_reload_total counter", "# TYPE hook_operator_panics_recovered_total counter"} {
		if i := strings.Index(page, f); i < 0 || i > hooks {
			t.Errorf("%q comes after the hooks' families (at %d, hooks' at %d)", f, i, hooks)
		}
	}
	if !rec.Flushed {
		t.Error("the operator's part was not flushed before the hooks' part was gathered")
	}
	// Gather (what tests and debug read) stays one sorted list.
	fams := m.Gather()
	if fams[0].Name != "aaa_first" {
		t.Errorf("Gather's first family is %s", fams[0].Name)
	}
}
