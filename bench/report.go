package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Metric names, as they appear in results JSON.
const (
	mSync        = "sync_s"            // process start to the hook's Synchronization run
	mRSS         = "rss_mb"            // RSS after start and settle (idle)
	mPeakRSS     = "peak_rss_mb"       // VmHWM after the settle
	mRSSLater    = "rss_later_mb"      // VmRSS after the settle
	mRSSAtSync   = "rss_at_sync_mb"    // VmRSS when the Synchronization mark was read
	mRSSAnon     = "rss_anon_mb"       // RssAnon with rss_mb or rss_later_mb: heap, stacks
	mRSSFile     = "rss_file_mb"       // RssFile with rss_mb or rss_later_mb: the binary's pages
	mConnected   = "connected_s"       // process start to the "connected to the cluster" log line
	mP50         = "latency_p50_ms"    // create returned to hook start
	mP90         = "latency_p90_ms"    //
	mP99         = "latency_p99_ms"    //
	mMax         = "latency_max_ms"    //
	mMissed      = "missed_events"     // objects the hook never saw
	mDrain       = "drain_s"           // last create returned to the last event's hook start
	mRate        = "create_rate_per_s" // creates per second the API server took
	mCPUPerEvent = "cpu_per_event_ms"  // operator CPU (not hooks) per created object
	mRuns        = "hook_runs"         // runs that delivered the events
)

// Run is one measured run of a scenario with one hook: every figure it
// produced and its raw latency samples.
type Run struct {
	Scenario string `json:"scenario"`
	// Variant tells runs of one scenario apart (keepFull=false, ...).
	Variant string `json:"variant,omitempty"`
	Hook    string `json:"hook"`
	Repeat  int    `json:"repeat"`
	// Objects is how many objects the run watched or created.
	Objects int                `json:"objects"`
	Metrics map[string]float64 `json:"metrics"`
	// LatenciesMS are create-to-hook latencies, one per object.
	LatenciesMS []float64 `json:"latencies_ms,omitempty"`
	// HookFailures counts failed hook runs (there should be none).
	HookFailures int `json:"hook_failures,omitempty"`
	// Profiled runs served pprof profiles and are left out of the medians.
	Profiled bool   `json:"profiled,omitempty"`
	Error    string `json:"error,omitempty"`
	Started  string `json:"started"`
}

// Summary is the median of one metric over the repeats of a scenario
// variant with one hook, and how it compares with its target.
type Summary struct {
	Scenario string    `json:"scenario"`
	Variant  string    `json:"variant,omitempty"`
	Hook     string    `json:"hook"`
	Objects  int       `json:"objects"`
	Metric   string    `json:"metric"`
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
	// Target is the limit (a maximum), when it has one for this
	// metric at these sizes.
	Target *float64 `json:"target,omitempty"`
	// ShellOperator is shell-operator v1.14.0's figure, when known.
	ShellOperator *float64 `json:"shell_operator,omitempty"`
	Pass          *bool    `json:"pass,omitempty"`
}

// Machine describes where the numbers were taken.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryMB   int    `json:"memory_mb"`
	Kernel     string `json:"kernel"`
	GoVersion  string `json:"go_version"`
	Commit     string `json:"commit"`
	Dirty      bool   `json:"dirty"`
	Binary     string `json:"binary_version"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// Report is everything a harness run writes to <timestamp>.json.
type Report struct {
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	DurationS float64   `json:"duration_s"`
	Machine   Machine   `json:"machine"`
	Config    *Config   `json:"config"`
	// Interrupted is set when the run was stopped before it finished.
	Interrupted bool      `json:"interrupted,omitempty"`
	Summaries   []Summary `json:"summaries"`
	// PerObject is the scale scenario's marginal cost of one more watched
	// object, between consecutive sizes.
	PerObject []PerObject `json:"per_object,omitempty"`
	Runs      []Run       `json:"runs"`
}

// PerObject is the cost of one object between two scale sizes: the slope
// of the growth curve.
type PerObject struct {
	Variant    string  `json:"variant"`
	From       int     `json:"from"`
	To         int     `json:"to"`
	SyncUS     float64 `json:"sync_us_per_object"`
	PeakRSSKB  float64 `json:"peak_rss_kb_per_object"`
	RSSLaterKB float64 `json:"rss_later_kb_per_object"`
}

// target is one of the limits, and shell-operator's figure.
type target struct {
	scenario, variant, metric string
	max, shellOperator        float64
	// applies tells whether the run's sizes are the ones the target is
	// for; a --quick run is not comparable.
	applies func(*Config) bool
}

func standardSync(c *Config) bool  { return c.SyncObjects == 12000 }
func standardBurst(c *Config) bool { return c.BurstObjects == 3000 }
func standardTrickle(c *Config) bool {
	return c.TrickleRate == 30 && c.TrickleFor == 10*time.Second
}
func always(*Config) bool { return true }

// targets are the performance targets. shellOperator is NaN where
// the issue gives no figure.
var targets = []target{
	{"idle", "", mRSS, 30, 75, always},
	{"sync", "keepFull=false", mSync, 1.0, 2.2, standardSync},
	{"sync", "keepFull=false", mPeakRSS, 90, 188, standardSync},
	{"sync", "keepFull=false", mRSSLater, 60, 185, standardSync},
	{"sync", "keepFull=true", mSync, 1.5, 3.4, standardSync},
	{"sync", "keepFull=true", mPeakRSS, 150, 347, standardSync},
	{"sync", "keepFull=true", mRSSLater, 150, 347, standardSync},
	{"trickle", "", mP50, 40, 62, standardTrickle},
	{"trickle", "", mP99, 90, 292, standardTrickle},
	{"burst", "", mDrain, 0.3, math.NaN(), standardBurst},
	{"burst", "", mP99, 250, 461, standardBurst},
	{"burst", "", mCPUPerEvent, 0.25, 0.54, standardBurst},
}

func findTarget(scenario, variant, metric string) *target {
	for i, t := range targets {
		if t.scenario == scenario && t.variant == variant && t.metric == metric {
			return &targets[i]
		}
	}
	return nil
}

// summarize groups runs by scenario, variant, hook and objects, and takes
// the median of each metric over the runs that did not fail.
func summarize(cfg *Config, runs []Run) []Summary {
	type key struct {
		scenario, variant, hook, metric string
		objects                         int
	}
	var order []key
	values := map[key][]float64{}
	for _, r := range runs {
		if r.Error != "" || r.Profiled {
			continue
		}
		metrics := make([]string, 0, len(r.Metrics))
		for m := range r.Metrics {
			metrics = append(metrics, m)
		}
		slices.Sort(metrics)
		for _, m := range metrics {
			k := key{r.Scenario, r.Variant, r.Hook, m, r.Objects}
			if _, ok := values[k]; !ok {
				order = append(order, k)
			}
			values[k] = append(values[k], r.Metrics[m])
		}
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		s := Summary{Scenario: k.scenario, Variant: k.variant, Hook: k.hook, Objects: k.objects, Metric: k.metric,
			Values: values[k], Median: median(values[k])}
		if t := findTarget(k.scenario, k.variant, k.metric); t != nil && t.applies(cfg) {
			limit, pass := t.max, median(values[k]) <= t.max
			s.Target, s.Pass = &limit, &pass
			if !math.IsNaN(t.shellOperator) {
				so := t.shellOperator
				s.ShellOperator = &so
			}
		}
		out = append(out, s)
	}
	return out
}

// perObject computes the scale scenario's slopes between consecutive sizes
// for every variant, from the summaries.
func perObject(summaries []Summary) []PerObject {
	type point struct{ sync, peak, later float64 }
	curves := map[string]map[int]*point{}
	var variants []string
	for _, s := range summaries {
		if s.Scenario != "scale" {
			continue
		}
		if curves[s.Variant] == nil {
			curves[s.Variant] = map[int]*point{}
			variants = append(variants, s.Variant)
		}
		p := curves[s.Variant][s.Objects]
		if p == nil {
			p = &point{}
			curves[s.Variant][s.Objects] = p
		}
		switch s.Metric {
		case mSync:
			p.sync = s.Median
		case mPeakRSS:
			p.peak = s.Median
		case mRSSLater:
			p.later = s.Median
		}
	}
	var out []PerObject
	for _, v := range variants {
		sizes := make([]int, 0, len(curves[v]))
		for n := range curves[v] {
			sizes = append(sizes, n)
		}
		slices.Sort(sizes)
		for i := 1; i < len(sizes); i++ {
			a, b := curves[v][sizes[i-1]], curves[v][sizes[i]]
			dn := float64(sizes[i] - sizes[i-1])
			out = append(out, PerObject{
				Variant: v, From: sizes[i-1], To: sizes[i],
				SyncUS:     (b.sync - a.sync) * 1e6 / dn,
				PeakRSSKB:  (b.peak - a.peak) * 1024 / dn,
				RSSLaterKB: (b.later - a.later) * 1024 / dn,
			})
		}
	}
	return out
}

// metricLabels name the metrics in the Markdown report, with their units.
var metricLabels = map[string]struct{ label, unit string }{
	mRSS:         {"RSS after start", "MB"},
	mSync:        {"process start to Synchronization run", "s"},
	mPeakRSS:     {"peak RSS (VmHWM)", "MB"},
	mRSSLater:    {"RSS %s after Synchronization", "MB"},
	mP50:         {"latency p50", "ms"},
	mP99:         {"latency p99", "ms"},
	mDrain:       {"last create to last event seen", "s"},
	mCPUPerEvent: {"operator CPU per event", "ms"},
	mRate:        {"create rate (not a target)", "/s"},
	mRuns:        {"hook runs (not a target)", ""},
}

// markdownRows are the rows of the main table: scenario, variant, metric.
var markdownRows = []struct{ scenario, variant, metric string }{
	{"idle", "", mRSS},
	{"sync", "keepFull=false", mSync},
	{"sync", "keepFull=false", mPeakRSS},
	{"sync", "keepFull=false", mRSSLater},
	{"sync", "keepFull=true", mSync},
	{"sync", "keepFull=true", mPeakRSS},
	{"sync", "keepFull=true", mRSSLater},
	{"trickle", "", mP50},
	{"trickle", "", mP99},
	{"burst", "", mRate},
	{"burst", "", mRuns},
	{"burst", "", mDrain},
	{"burst", "", mP99},
	{"burst", "", mCPUPerEvent},
}

// metricLabel names a metric in the Markdown report.
func metricLabel(c *Config, metric string) string {
	l := metricLabels[metric].label
	if metric == mRSSLater {
		l = fmt.Sprintf(l, c.Settle)
	}
	return l
}

// scenarioLabel describes a scenario variant in the Markdown report.
func scenarioLabel(c *Config, scenario, variant string) string {
	switch scenario {
	case "idle":
		return "idle"
	case "sync":
		return fmt.Sprintf("sync %s, %s", count(c.SyncObjects), variantLabel(variant))
	case "trickle":
		return fmt.Sprintf("trickle %d/s for %s", c.TrickleRate, c.TrickleFor)
	case "burst":
		return "burst " + count(c.BurstObjects)
	}
	return scenario
}

func variantLabel(v string) string {
	return strings.Replace(v, "keepFull=", "keepFullObjectsInMemory: ", 1)
}

// count writes n with thousands separators: 12,000.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formatValue writes a metric value with the precision its unit needs.
func formatValue(metric string, v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	unit := metricLabels[metric].unit
	var s string
	switch {
	case metric == mCPUPerEvent:
		s = fmt.Sprintf("%.3f", v)
	case unit == "s":
		s = fmt.Sprintf("%.2f", v)
	case unit == "" || unit == "/s":
		s = fmt.Sprintf("%.0f", v)
	default:
		s = fmt.Sprintf("%.1f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// Markdown renders the short report: one table of the targets, one of the
// scale scenario's growth curve.
func (r *Report) Markdown() string {
	var b strings.Builder
	m := r.Machine
	dirty := ""
	if m.Dirty {
		dirty = " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "# hook-operator benchmark, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%s, %d cores, %d MB; %s; commit %s%s; %s; median of %d run(s); took %s; load average before %s, after %s.",
		m.CPU, m.Cores, m.MemoryMB, m.GoVersion, m.Commit, dirty, m.Binary, r.Config.Repeat,
		time.Duration(r.DurationS*float64(time.Second)).Round(time.Second), m.LoadBefore, m.LoadAfter)
	if r.Config.Quick {
		b.WriteString(" **--quick: small sizes, not comparable with the targets.**")
	}
	if r.Interrupted {
		b.WriteString(" **Interrupted: incomplete.**")
	}
	b.WriteString("\n\n")

	hooks := r.Config.Hooks
	b.WriteString("| scenario | metric | target | shell-operator v1.14.0 |")
	for _, h := range hooks {
		fmt.Fprintf(&b, " %s hook |", h)
	}
	b.WriteString(" result |\n|---|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(hooks)))
	b.WriteString("---|\n")
	for _, row := range markdownRows {
		if !slices.Contains(r.Config.Scenarios, row.scenario) {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s |", scenarioLabel(r.Config, row.scenario, row.variant), metricLabel(r.Config, row.metric))
		t := findTarget(row.scenario, row.variant, row.metric)
		if t != nil {
			fmt.Fprintf(&b, " ≤ %s | %s |", formatValue(row.metric, t.max), formatValue(row.metric, t.shellOperator))
		} else {
			b.WriteString(" | |")
		}
		result := ""
		for _, h := range hooks {
			s := r.find(row.scenario, row.variant, h, row.metric, 0)
			if s == nil {
				b.WriteString(" — |")
				result = combine(result, "incomplete")
				continue
			}
			fmt.Fprintf(&b, " %s |", formatValue(row.metric, s.Median))
			switch {
			case t == nil:
			case s.Pass == nil:
				result = combine(result, "n/a (sizes)")
			case *s.Pass:
				result = combine(result, "pass")
			default:
				result = combine(result, "FAIL ("+h+")")
			}
		}
		if t == nil {
			result = ""
		}
		fmt.Fprintf(&b, " %s |\n", result)
	}
	r.writeScale(&b)
	if n := r.failedRuns(); n > 0 {
		fmt.Fprintf(&b, "\n%d run(s) failed and are left out of the medians; see the JSON file for why.\n", n)
	}
	return b.String()
}

// combine joins the per-hook results of a row: pass only if all pass.
func combine(acc, next string) string {
	switch {
	case acc == "" || acc == "pass":
		return next
	case next == "pass" || acc == next:
		return acc
	}
	return acc + ", " + next
}

// writeScale writes the scale scenario's growth table.
func (r *Report) writeScale(b *strings.Builder) {
	if !slices.Contains(r.Config.Scenarios, "scale") || len(r.Config.Hooks) == 0 {
		return
	}
	hook := r.Config.Hooks[0]
	fmt.Fprintf(b, "\nScale (%s hook, no targets): what the operator costs per watched ConfigMap.\n\n", hook)
	fmt.Fprintf(b, "| objects | keepFullObjectsInMemory | process start to Synchronization | peak RSS | RSS %s later |\n|---|---|---|---|---|\n", r.Config.Settle)
	for _, variant := range []string{"keepFull=false", "keepFull=true"} {
		for _, n := range r.Config.ScaleSizes {
			cell := func(metric string) string {
				if s := r.find("scale", variant, hook, metric, n); s != nil {
					return formatValue(metric, s.Median)
				}
				return "—"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", count(n), strings.TrimPrefix(variant, "keepFull="),
				cell(mSync), cell(mPeakRSS), cell(mRSSLater))
		}
	}
	for _, p := range r.PerObject {
		fmt.Fprintf(b, "| per object, %s → %s | %s | %.1f µs | %.2f KB | %.2f KB |\n", count(p.From), count(p.To),
			strings.TrimPrefix(p.Variant, "keepFull="), p.SyncUS, p.PeakRSSKB, p.RSSLaterKB)
	}
}

// find returns the summary of one metric (objects 0 matches any).
func (r *Report) find(scenario, variant, hook, metric string, objects int) *Summary {
	for i, s := range r.Summaries {
		if s.Scenario == scenario && s.Variant == variant && s.Hook == hook && s.Metric == metric && (objects == 0 || s.Objects == objects) {
			return &r.Summaries[i]
		}
	}
	return nil
}

func (r *Report) failedRuns() int {
	n := 0
	for _, run := range r.Runs {
		if run.Error != "" && !run.Profiled {
			n++
		}
	}
	return n
}
