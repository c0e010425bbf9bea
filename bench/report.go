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
	mSync          = "sync_s"                      // process start to the hook's Synchronization run
	mRSS           = "rss_mb"                      // RSS after start and settle (idle)
	mPeakRSS       = "peak_rss_mb"                 // VmHWM after the settle
	mRSSLater      = "rss_later_mb"                // VmRSS after the settle
	mRSSAtSync     = "rss_at_sync_mb"              // VmRSS when the Synchronization mark was read
	mRSSAnon       = "rss_anon_mb"                 // RssAnon with rss_mb or rss_later_mb: heap, stacks
	mRSSFile       = "rss_file_mb"                 // RssFile with rss_mb or rss_later_mb: the binary's pages
	mConnected     = "connected_s"                 // process start to the "connected to the cluster" log line
	mP50           = "latency_p50_ms"              // create returned to hook start
	mP90           = "latency_p90_ms"              //
	mP99           = "latency_p99_ms"              //
	mMax           = "latency_max_ms"              //
	mMissed        = "missed_events"               // objects the hook never saw
	mWatchP50      = "watch_p50_ms"                // create returned to a bare watch's event (the floor)
	mWatchP99      = "watch_p99_ms"                //
	mAfterP50      = "after_watch_p50_ms"          // a bare watch's event to the hook start: the operator's own part
	mAfterP99      = "after_watch_p99_ms"          //
	mDrain         = "drain_s"                     // last create returned to the last event's hook start
	mRate          = "create_rate_per_s"           // creates per second the API server took
	mCPUPerEvent   = "cpu_per_event_ms"            // operator CPU (not hooks) per created object
	mCPUWithHooks  = "cpu_with_hooks_per_event_ms" // operator and hook CPU (reaped runs, live resident processes) per created object
	mHookRSS       = "hook_rss_mb"                 // resident variants: RSS of one resident hook process, between runs
	mHookProcesses = "hook_processes"              // resident variants: live hook processes under the operator
	mRuns          = "hook_runs"                   // runs that delivered the events
	mFloor         = "floor_s"                     // scale: a bare streaming list of the same objects
	mOverFloor     = "sync_over_floor"             // scale: sync_s as a multiple of floor_s
	mPeakOver      = "peak_over_settled"           // sync, scale: peak_rss_mb ÷ rss_later_mb, the start-up peak over what the process settles at

	mAdmBaseP50    = "admission_base_p50_ms"     // a dry-run create the webhook does not match
	mAdmAddedP50   = "admission_added_p50_ms"    // what the webhook adds to a create, p50
	mAdmAddedP99   = "admission_added_p99_ms"    // ... p99
	mAdmRate       = "admission_rps"             // requests answered per second with 32 in flight
	mAdmRateGain   = "admission_rps_gain"        // resident variants: admission_rps ÷ the one-shot hook's (same repeat)
	mAdmFreeRate   = "admission_free_rps"        // creates the webhook does not match, per second with 32 in flight
	mAdmDirectRate = "admission_direct_rps"      // AdmissionReviews sent to the operator directly, answered per second with 32 in flight
	mAdmDirectGain = "admission_direct_rps_gain" // resident variants: admission_direct_rps ÷ the one-shot hook's (same repeat)

	mFailover     = "failover_s"               // the leader signalled to the new leader's first hook run
	mLeaseTaken   = "lease_taken_s"            // the leader signalled to the standby taking the Lease
	mTakeoverSync = "takeover_sync_s"          // the Lease taken to the first hook run (start-up of the bindings)
	mStandbyRSS   = "standby_rss_mb"           // the standby's VmRSS before the handover
	mLeaderRSS    = "leader_rss_mb"            // the leader's VmRSS at the same moment
	mLeaderReqs   = "leader_requests_per_min"  // API requests per minute of a settled leader
	mStandbyReqs  = "standby_requests_per_min" // ... of a settled standby

	mObjectRate   = "objects_per_s" // parallel: objects handled per second, first create to the last object's run
	mParallelCost = "parallel_cost" // parallel: time per object at parallelism 16 ÷ at parallelism 1 (same repeat)
	mShardScale   = "shard_scale"   // sharded: 3 replicas' objects per second ÷ one replica's (same parallelism, same repeat)
	mTwice        = "handled_twice" // sharded: objects whose events reached more than one replica
)

// Run is one measured run of a scenario with one hook: every figure it
// produced and its raw latency samples.
type Run struct {
	Scenario string `json:"scenario"`
	// Variant tells runs of one scenario apart (keepFull=false, ...).
	Variant string `json:"variant,omitempty"`
	// Operator is ours ("hook-operator") or the reference ("shell-operator").
	Operator string `json:"operator"`
	Hook     string `json:"hook"`
	Repeat   int    `json:"repeat"`
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
// variant with one operator and hook, and for ours, how it compares with
// its target and with the reference.
type Summary struct {
	Scenario string    `json:"scenario"`
	Variant  string    `json:"variant,omitempty"`
	Operator string    `json:"operator"`
	Hook     string    `json:"hook"`
	Objects  int       `json:"objects"`
	Metric   string    `json:"metric"`
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
	// Target is the limit (a maximum) when there is one for this metric at
	// these sizes; Pass says whether the median keeps to it.
	Target *float64 `json:"target,omitempty"`
	Pass   *bool    `json:"pass,omitempty"`
	// Reference is the reference's median of the same metric in the same
	// harness run, and Ratio ours divided by it (ours only).
	Reference *float64 `json:"reference,omitempty"`
	Ratio     *float64 `json:"ratio,omitempty"`
	// RatioTarget is the limit of Ratio, when there is one; RatioPass says
	// whether Ratio keeps to it.
	RatioTarget *float64 `json:"ratio_target,omitempty"`
	RatioPass   *bool    `json:"ratio_pass,omitempty"`
}

// Machine describes where the numbers were taken.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryMB  int    `json:"memory_mb"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
	Dirty     bool   `json:"dirty"`
	Binary    string `json:"binary_version"`
	// Reference is the reference's version, "" when it did not run.
	Reference  string `json:"reference_version,omitempty"`
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
	// RSSLaterTarget is the limit of RSSLaterKB (keepFull=false only), and
	// Pass whether it keeps to it.
	RSSLaterTarget *float64 `json:"rss_later_kb_target,omitempty"`
	Pass           *bool    `json:"pass,omitempty"`
}

// perObjectRSSTarget is the settled memory one more watched object may
// cost with keepFullObjectsInMemory: false, in KB.
const perObjectRSSTarget = 0.6

// target is a limit on one metric: on our figure (max), on ours divided by
// the reference's (ratio), or both; NaN where there is none.
type target struct {
	// hook: the target is for this hook kind only; "" for any hook that
	// has none of its own.
	hook                      string
	scenario, variant, metric string
	// objects: the target is for this size only; 0 for any.
	objects    int
	max, ratio float64
	// applies tells whether the run's sizes are the ones the target is
	// for; a --quick run is not comparable.
	applies func(*Config) bool
}

func standardSync(c *Config) bool { return c.SyncObjects == 12000 }

// standardBurst: the targets are for 3,000 creates as fast as the API
// server takes them, not for a paced burst.
func standardBurst(c *Config) bool { return c.BurstObjects == 3000 && c.BurstRate == 0 }
func standardTrickle(c *Config) bool {
	return c.TrickleRate == 30 && c.TrickleFor == 10*time.Second
}
func always(*Config) bool { return true }
func standardAdmission(c *Config) bool {
	return c.AdmissionRequests == 1000
}

var none = math.NaN()

// atLeast are the metrics whose target is a least value: more is better.
// Every other target is a most.
var atLeast = map[string]bool{mShardScale: true, mAdmRateGain: true, mAdmDirectGain: true}

// within reports whether v meets limit for metric.
func within(metric string, v, limit float64) bool {
	if atLeast[metric] {
		return v >= limit
	}
	return v <= limit
}

// targets are the performance targets of the issues: absolute ones on our
// figures, and ratios to shell-operator's figures measured in the same
// harness run (time to Synchronization and CPU per event at most 0.35×,
// memory and latency at most 0.4×). A hook kind's own target replaces the
// one for any hook.
var targets = []target{
	{"", "idle", "", mRSS, 0, 30, 0.4, always},
	{"", "sync", "keepFull=false", mSync, 0, 1.0, 0.35, standardSync},
	{"", "sync", "keepFull=false", mPeakRSS, 0, 90, none, standardSync},
	{"", "sync", "keepFull=false", mRSSLater, 0, 60, 0.4, standardSync},
	{"", "sync", "keepFull=true", mSync, 0, 1.5, 0.35, standardSync},
	{"", "sync", "keepFull=true", mPeakRSS, 0, 150, none, standardSync},
	{"", "sync", "keepFull=true", mRSSLater, 0, 150, 0.4, standardSync},
	{"", "trickle", "", mP50, 0, 40, none, standardTrickle},
	{"", "trickle", "", mP99, 0, 90, 0.4, standardTrickle},
	{"", "burst", "", mDrain, 0, 0.3, none, standardBurst},
	{"", "burst", "", mP99, 0, 250, 0.4, standardBurst},
	// Issue 45: on 16 cores, an event waits no longer for its hook than
	// under shell-operator (from a bare watch's event to the hook's start),
	// the tail is a fraction of its tail, and the operator's own CPU per
	// event 0.06 ms (0.17×).
	{"", "burst", "", mAfterP50, 0, none, 1, standardBurst},
	{goHook, "burst", "", mP99, 0, 250, 0.15, standardBurst},
	{bashHook, "burst", "", mP99, 0, 250, 0.3, standardBurst},
	{"", "burst", "", mCPUPerEvent, 0, 0.06, 0.17, standardBurst},
	{"", "failover", "SIGTERM", mFailover, 0, 3, none, always},
	{"", "parallel", "sleep, parallelism 16", mParallelCost, 0, 0.1, none, always},
	{"", "sharded", "3 replica(s), parallelism 1", mShardScale, 0, 2.5, none, always},
	{"", "sharded", "3 replica(s), parallelism 4", mShardScale, 0, 2.5, none, always},
	{"", "failover", "SIGKILL", mFailover, 0, 20, none, always},
	{"", "scale", "keepFull=false", mOverFloor, 100000, 1.3, none, always},
	{"", "scale", "keepFull=true", mOverFloor, 100000, 1.3, none, always},
	// Issue 37: the start-up peak at most 1.3× the settled RSS.
	{"", "scale", "keepFull=false", mPeakOver, 100000, 1.3, none, always},
	{"", "scale", "keepFull=true", mPeakOver, 100000, 1.3, none, always},
	{"", "scale", "keepFull=false", mPeakOver, 300000, 1.3, none, always},
	{"", "scale", "keepFull=true", mPeakOver, 300000, 1.3, none, always},
	// Issue 34: the resident Go hook. Its ratios are to shell-operator's
	// one-shot Go hook.
	{goResidentHook, "trickle", "", mP50, 0, 2, none, standardTrickle},
	{goResidentHook, "trickle", "", mP99, 0, 10, 0.4, standardTrickle},
	{goResidentHook, "burst", "", mP99, 0, 250, 0.15, standardBurst},
	{goResidentHook, "burst", "", mCPUWithHooks, 0, none, 0.15, standardBurst},
	{goResidentHook, "admission", "", mAdmAddedP50, 0, 3, none, standardAdmission},
	// Requests per second: the operator's own rate (reviews sent to it
	// directly), since through the API server the rate on this machine is
	// the API server's (admission_free_rps).
	{goResidentHook, "admission", "", mAdmDirectGain, 0, 5, none, standardAdmission},
}

// findTarget returns hook's target for a metric, else the one for any
// hook; nil when there is none.
func findTarget(scenario, variant, metric, hook string, objects int) *target {
	var general *target
	for i, t := range targets {
		if t.scenario == scenario && t.variant == variant && t.metric == metric && (t.objects == 0 || t.objects == objects) {
			switch t.hook {
			case hook:
				return &targets[i]
			case "":
				general = &targets[i]
			}
		}
	}
	return general
}

// summarize groups runs by scenario, variant, operator, hook and objects,
// and takes the median of each metric over the runs that did not fail. Our
// summaries are set against their targets and the reference's.
func summarize(cfg *Config, runs []Run) []Summary {
	type key struct {
		scenario, variant, operator, hook, metric string
		objects                                   int
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
			k := key{r.Scenario, r.Variant, r.Operator, r.Hook, m, r.Objects}
			if _, ok := values[k]; !ok {
				order = append(order, k)
			}
			values[k] = append(values[k], r.Metrics[m])
		}
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		s := Summary{Scenario: k.scenario, Variant: k.variant, Operator: k.operator, Hook: k.hook, Objects: k.objects,
			Metric: k.metric, Values: values[k], Median: median(values[k])}
		if k.operator == ours {
			t := findTarget(k.scenario, k.variant, k.metric, k.hook, k.objects)
			if t != nil && !t.applies(cfg) {
				t = nil
			}
			if t != nil && !math.IsNaN(t.max) {
				s.Target, s.Pass = ptr(t.max), ptr(within(k.metric, s.Median, t.max))
			}
			rk := k
			rk.operator, rk.hook = reference, oneShot(k.hook)
			// A ratio to nothing (0 missed events of 0) means nothing.
			if rv, ok := values[rk]; ok && median(rv) > 0 {
				ref := median(rv)
				s.Reference, s.Ratio = ptr(ref), ptr(s.Median/ref)
				if t != nil && !math.IsNaN(t.ratio) {
					s.RatioTarget, s.RatioPass = ptr(t.ratio), ptr(*s.Ratio <= t.ratio)
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// perObject computes the scale scenario's slopes between consecutive sizes
// for every variant, from the summaries.
func perObject(summaries []Summary) []PerObject {
	type point struct{ sync, peak, later float64 }
	curves := map[string]map[int]*point{}
	var variants []string
	for _, s := range summaries {
		if s.Scenario != "scale" || s.Operator != ours {
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
			p := PerObject{
				Variant: v, From: sizes[i-1], To: sizes[i],
				SyncUS:     (b.sync - a.sync) * 1e6 / dn,
				PeakRSSKB:  (b.peak - a.peak) * 1024 / dn,
				RSSLaterKB: (b.later - a.later) * 1024 / dn,
			}
			if v == "keepFull=false" {
				p.RSSLaterTarget, p.Pass = ptr(perObjectRSSTarget), ptr(p.RSSLaterKB <= perObjectRSSTarget)
			}
			out = append(out, p)
		}
	}
	return out
}

// metricLabels name the metrics in the Markdown report, with their units.
var metricLabels = map[string]struct{ label, unit string }{
	mRSS:           {"RSS after start", "MB"},
	mSync:          {"process start to Synchronization run", "s"},
	mPeakRSS:       {"peak RSS (VmHWM)", "MB"},
	mRSSLater:      {"RSS %s after Synchronization", "MB"},
	mP50:           {"latency p50", "ms"},
	mP99:           {"latency p99", "ms"},
	mWatchP50:      {"a bare watch's event, p50 (the floor, not a target)", "ms"},
	mWatchP99:      {"a bare watch's event, p99 (the floor, not a target)", "ms"},
	mAfterP50:      {"bare watch's event to hook start, p50", "ms"},
	mAfterP99:      {"bare watch's event to hook start, p99 (not a target)", "ms"},
	mDrain:         {"last create to last event seen", "s"},
	mCPUPerEvent:   {"operator CPU per event", "ms"},
	mCPUWithHooks:  {"operator plus hook CPU per event", "ms"},
	mHookRSS:       {"RSS of a resident hook process", "MB"},
	mHookProcesses: {"resident hook processes (not a target)", ""},
	mRate:          {"create rate (not a target)", "/s"},
	mRuns:          {"hook runs (not a target)", ""},
	mFloor:         {"bare streaming list", "s"},
	mOverFloor:     {"Synchronization / bare streaming list", "×"},
	mPeakOver:      {"peak RSS ÷ settled RSS", "×"},
	mAdmBaseP50:    {"create without the webhook, p50 (not a target)", "ms"},
	mAdmAddedP50:   {"latency the webhook adds, p50", "ms"},
	mAdmAddedP99:   {"latency the webhook adds, p99 (no target)", "ms"},
	mAdmFreeRate:   {"creates without the webhook per second, 32 in flight (the API server's own rate; not a target)", "/s"},
	mAdmRate:       {"requests answered at the cap, through the API server", "/s"},
	mAdmRateGain:   {"through the API server, requests per second ÷ the one-shot hook's (no target)", "×"},
	mAdmDirectRate: {"reviews sent to the operator directly, answered per second", "/s"},
	mAdmDirectGain: {"sent directly, requests per second ÷ the one-shot hook's", "×"},
	mObjectRate:    {"objects handled per second", "/s"},
	mParallelCost:  {"time per object ÷ that at parallelism 1", "×"},
	mShardScale:    {"objects per second ÷ one replica's", "×"},
	mTwice:         {"objects handled by more than one replica", ""},
	mFailover:      {"signal to the new leader's first hook run", "s"},
	mLeaseTaken:    {"signal to the Lease taken (no target)", "s"},
	mTakeoverSync:  {"Lease taken to the first hook run (no target)", "s"},
	mStandbyRSS:    {"RSS of a standby (no target)", "MB"},
	mLeaderRSS:     {"RSS of the leader (no target)", "MB"},
	mLeaderReqs:    {"API requests per minute, leader (no target)", "/min"},
	mStandbyReqs:   {"API requests per minute, standby (no target)", "/min"},
}

// markdownRows are the rows of the main table: scenario, variant, metric.
var markdownRows = []struct{ scenario, variant, metric string }{
	{"idle", "", mRSS},
	{"idle", "", mHookRSS},
	{"sync", "keepFull=false", mSync},
	{"sync", "keepFull=false", mPeakRSS},
	{"sync", "keepFull=false", mRSSLater},
	{"sync", "keepFull=true", mSync},
	{"sync", "keepFull=true", mPeakRSS},
	{"sync", "keepFull=true", mRSSLater},
	{"trickle", "", mP50},
	{"trickle", "", mP99},
	{"trickle", "", mWatchP99},
	{"trickle", "", mAfterP99},
	{"burst", "", mRate},
	{"burst", "", mRuns},
	{"burst", "", mDrain},
	{"burst", "", mP99},
	{"burst", "", mWatchP99},
	{"burst", "", mAfterP50},
	{"burst", "", mAfterP99},
	{"burst", "", mCPUPerEvent},
	{"burst", "", mCPUWithHooks},
	{"burst", "", mHookRSS},
	{"admission", "", mAdmBaseP50},
	{"admission", "", mAdmAddedP50},
	{"admission", "", mAdmAddedP99},
	{"admission", "", mAdmFreeRate},
	{"admission", "", mAdmRate},
	{"admission", "", mAdmRateGain},
	{"admission", "", mAdmDirectRate},
	{"admission", "", mAdmDirectGain},
	{"parallel", "sleep, parallelism 1", mObjectRate},
	{"parallel", "sleep, parallelism 4", mObjectRate},
	{"parallel", "sleep, parallelism 16", mObjectRate},
	{"parallel", "sleep, parallelism 16", mParallelCost},
	{"parallel", "spin, parallelism 1", mObjectRate},
	{"parallel", "spin, parallelism 16", mObjectRate},
	{"sharded", "1 replica(s), parallelism 1", mObjectRate},
	{"sharded", "2 replica(s), parallelism 1", mObjectRate},
	{"sharded", "3 replica(s), parallelism 1", mObjectRate},
	{"sharded", "3 replica(s), parallelism 1", mShardScale},
	{"sharded", "1 replica(s), parallelism 4", mObjectRate},
	{"sharded", "3 replica(s), parallelism 4", mObjectRate},
	{"sharded", "3 replica(s), parallelism 4", mShardScale},
	{"sharded", "3 replica(s), parallelism 1", mTwice},
	{"failover", "SIGTERM", mFailover},
	{"failover", "SIGTERM", mLeaseTaken},
	{"failover", "SIGTERM", mTakeoverSync},
	{"failover", "SIGKILL", mFailover},
	{"failover", "SIGKILL", mLeaseTaken},
	{"failover", "SIGTERM", mStandbyRSS},
	{"failover", "SIGTERM", mLeaderRSS},
	{"failover", "SIGTERM", mLeaderReqs},
	{"failover", "SIGTERM", mStandbyReqs},
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
	case "admission":
		return fmt.Sprintf("admission %s requests (hook-operator only)", count(c.AdmissionRequests))
	case "parallel":
		n := c.ParallelObjects
		if strings.HasPrefix(variant, "spin") {
			n = max(n/4, 1)
		}
		return fmt.Sprintf("parallel (%s; 50 ms per object), %s ConfigMaps (hook-operator only)", variant, count(n))
	case "sharded":
		return fmt.Sprintf("sharded (%s; 50 ms per object), %s ConfigMaps (hook-operator only)", variant, count(c.ParallelObjects))
	case "failover":
		return fmt.Sprintf("failover after %s, %s ConfigMaps, %d handovers (hook-operator only)", variant, count(c.FailoverObjects), c.FailoverHandovers)
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
	case metric == mCPUPerEvent || metric == mCPUWithHooks:
		s = fmt.Sprintf("%.3f", v)
	case unit == "s":
		s = fmt.Sprintf("%.2f", v)
	case unit == "×":
		return fmt.Sprintf("%.2f×", v)
	case unit == "" || unit == "/s" || unit == "/min":
		s = fmt.Sprintf("%.0f", v)
	default:
		s = fmt.Sprintf("%.1f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// Markdown renders the short report: one table of the targets, with ours,
// the reference's and the ratio for each hook, and one of the scale
// scenario's growth curve.
func (r *Report) Markdown() string {
	var b strings.Builder
	m := r.Machine
	dirty := ""
	if m.Dirty {
		dirty = " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "# hook-operator benchmark, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%s, %d cores, %d MB; %s; commit %s%s; %s; median of %d run(s); took %s; load average before %s, after %s.",
		m.CPU, m.Cores, m.MemoryMB, m.GoVersion, m.Commit, dirty, m.Operators(), r.Config.Repeat,
		time.Duration(r.DurationS*float64(time.Second)).Round(time.Second), m.LoadBefore, m.LoadAfter)
	if r.Config.Quick {
		b.WriteString(" **--quick: small sizes, not comparable with the targets.**")
	}
	if r.Interrupted {
		b.WriteString(" **Interrupted: incomplete.**")
	}
	b.WriteString("\n\n")
	withRef := m.Reference != ""
	if withRef {
		b.WriteString("Both operators ran in this session, their runs alternating, with the same hooks, objects and cluster; " +
			"ratio is hook-operator divided by shell-operator (lower is better for every figure but the create rate).\n\n")
	}

	writeTableHead(&b, r.Config.Hooks, withRef)
	for _, row := range markdownRows {
		if slices.Contains(r.Config.Scenarios, row.scenario) && r.hasRow(row.scenario, row.metric) {
			r.writeRow(&b, row.scenario, row.variant, row.metric, withRef)
		}
	}
	r.writeScale(&b)
	if n := r.failedRuns(); n > 0 {
		fmt.Fprintf(&b, "\n%d run(s) failed and are left out of the medians; see the JSON file for why.\n", n)
	}
	return b.String()
}

// writeTableHead writes the head of the targets table: per hook, ours, and
// with a reference its figure and the ratio.
func writeTableHead(b *strings.Builder, hooks []string, withRef bool) {
	b.WriteString("| scenario | metric | target |")
	cols := 1
	if withRef {
		b.WriteString(" ratio target |")
		cols = 3
	}
	for _, h := range hooks {
		switch {
		case withRef && residentHook(h):
			fmt.Fprintf(b, " %s hook: hook-operator | shell-operator (%s hook) | ratio |", h, oneShot(h))
		case withRef:
			fmt.Fprintf(b, " %s hook: hook-operator | shell-operator | ratio |", h)
		default:
			fmt.Fprintf(b, " %s hook |", h)
		}
	}
	b.WriteString(" result |\n|---|---|---|")
	if withRef {
		b.WriteString("---|")
	}
	b.WriteString(strings.Repeat("---|", cols*len(hooks)))
	b.WriteString("---|\n")
}

// writeRow writes one row of the targets table: the limits, each hook's
// figures, and the verdict against each hook's own target.
func (r *Report) writeRow(b *strings.Builder, scenario, variant, metric string, withRef bool) {
	hooks := r.Config.Hooks
	cols := 1
	if withRef {
		cols = 3
	}
	fmt.Fprintf(b, "| %s | %s |", scenarioLabel(r.Config, scenario, variant), metricLabel(r.Config, metric))
	b.WriteString(" " + limits(scenario, variant, metric, hooks, false) + " |")
	if withRef {
		b.WriteString(" " + limits(scenario, variant, metric, hooks, true) + " |")
	}
	result, targeted := "", false
	for _, h := range hooks {
		t := findTarget(scenario, variant, metric, h, 0)
		targeted = targeted || t != nil
		s := r.find(scenario, variant, ours, h, metric, 0)
		if s == nil {
			b.WriteString(strings.Repeat(" — |", cols))
			if t != nil {
				result = combine(result, "incomplete")
			}
			continue
		}
		fmt.Fprintf(b, " %s |", formatValue(metric, s.Median))
		if withRef {
			if s.Ratio != nil {
				fmt.Fprintf(b, " %s | %.2f× |", formatValue(metric, *s.Reference), *s.Ratio)
			} else {
				b.WriteString(" — | — |")
			}
		}
		if t != nil {
			result = combine(result, verdict(t.max, s.Pass, h))
			if withRef {
				result = combine(result, verdict(t.ratio, s.RatioPass, h+" ratio"))
			}
		}
	}
	if !targeted {
		result = ""
	}
	fmt.Fprintf(b, " %s |\n", result)
}

// limits writes the limits of a row for the table: the one for any hook,
// then each hook's own where it differs ("go-resident: ≤ 2.0 ms"); with
// ratio the ratios.
func limits(scenario, variant, metric string, hooks []string, ratio bool) string {
	var parts []string
	general := limit(metric, findTarget(scenario, variant, metric, "", 0), ratio)
	if general != "" {
		parts = append(parts, general)
	}
	for _, h := range hooks {
		if t := findTarget(scenario, variant, metric, h, 0); t != nil && t.hook == h {
			if l := limit(metric, t, ratio); l != "" && l != general {
				parts = append(parts, h+": "+l)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// hasRow reports whether a row holds a figure for some hook; the rows that
// only resident variants fill (a resident process's RSS, the admission
// rate against the one-shot hook) are left out when none ran.
func (r *Report) hasRow(scenario, metric string) bool {
	switch metric {
	case mHookRSS, mAdmRateGain, mAdmDirectGain:
	default:
		return true
	}
	for _, s := range r.Summaries {
		if s.Scenario == scenario && s.Metric == metric {
			return true
		}
	}
	return false
}

// limit writes a target's limit for the table: the absolute one, or with
// ratio the ratio; "" when there is none.
func limit(metric string, t *target, ratio bool) string {
	switch {
	case t == nil:
		return ""
	case ratio && !math.IsNaN(t.ratio):
		return fmt.Sprintf("≤ %.2f×", t.ratio)
	case ratio:
		return ""
	case !ratio && !math.IsNaN(t.max) && atLeast[metric]:
		return "≥ " + formatValue(metric, t.max)
	case !ratio && !math.IsNaN(t.max):
		return "≤ " + formatValue(metric, t.max)
	}
	return ""
}

// verdict is the result of one figure against its limit (NaN: none, and
// the verdict is "").
func verdict(limit float64, pass *bool, what string) string {
	switch {
	case math.IsNaN(limit):
		return ""
	case pass == nil:
		return "n/a (sizes)"
	case *pass:
		return "pass"
	}
	return "FAIL (" + what + ")"
}

// combine joins the per-hook results of a row: pass only if all pass.
func combine(acc, next string) string {
	switch {
	case next == "" || next == acc:
		return acc
	case acc == "" || acc == "pass":
		return next
	case next == "pass":
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
	fmt.Fprintf(b, "\nScale (hook-operator, %s hook): what the operator costs per watched ConfigMap, and its Synchronization "+
		"as a multiple of the floor, a bare streaming list of the same objects (target at 100,000: ≤ 1.3×; "+
		"settled memory per object with keepFullObjectsInMemory false: ≤ %.1f KB; peak RSS at 100,000 and 300,000: ≤ 1.3× the RSS it settles at).\n\n", hook, perObjectRSSTarget)
	fmt.Fprintf(b, "| objects | keepFullObjectsInMemory | process start to Synchronization | bare streaming list | × floor | peak RSS | RSS %s later | peak ÷ settled |\n|---|---|---|---|---|---|---|---|\n", r.Config.Settle)
	for _, variant := range []string{"keepFull=false", "keepFull=true"} {
		for _, n := range r.Config.ScaleSizes {
			cell := func(metric string) string {
				s := r.find("scale", variant, ours, hook, metric, n)
				switch {
				case s == nil:
					return "—"
				case s.Pass != nil && !*s.Pass:
					return formatValue(metric, s.Median) + " (FAIL)"
				}
				return formatValue(metric, s.Median)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", count(n), strings.TrimPrefix(variant, "keepFull="),
				cell(mSync), cell(mFloor), cell(mOverFloor), cell(mPeakRSS), cell(mRSSLater), cell(mPeakOver))
		}
	}
	for _, p := range r.PerObject {
		later := fmt.Sprintf("%.2f KB", p.RSSLaterKB)
		if p.Pass != nil && !*p.Pass {
			later += " (FAIL)"
		}
		fmt.Fprintf(b, "| per object, %s → %s | %s | %.1f µs | | | %.2f KB | %s | |\n", count(p.From), count(p.To),
			strings.TrimPrefix(p.Variant, "keepFull="), p.SyncUS, p.PeakRSSKB, later)
	}
}

// find returns the summary of one metric (objects 0 matches any).
func (r *Report) find(scenario, variant, operator, hook, metric string, objects int) *Summary {
	for i, s := range r.Summaries {
		if s.Scenario == scenario && s.Variant == variant && s.Operator == operator && s.Hook == hook && s.Metric == metric &&
			(objects == 0 || s.Objects == objects) {
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
