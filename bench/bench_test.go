package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	in := []float64{3, 1, 2}
	median(in)
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Errorf("median sorted its argument: %v", in)
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100 ... 1
	}
	for _, tc := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0.1, 1}} {
		if got := percentile(xs, tc.p); got != tc.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile([]float64{7, 9}, 50); got != 7 {
		t.Errorf("p50 of two values = %v, want the lower one (nearest rank)", got)
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing should be NaN")
	}
}

func TestLatencies(t *testing.T) {
	t0 := time.Unix(1000, 0)
	names := []string{"a", "b", "c"}
	returned := []time.Time{t0, t0.Add(time.Millisecond), {}}
	seen := map[string]time.Time{"a": t0.Add(12500 * time.Microsecond), "c": t0}
	got := latencies(names, returned, seen)
	if !slices.Equal(got, []float64{12.5}) {
		t.Errorf("latencies = %v, want [12.5] (b never seen, c never returned)", got)
	}
}

func TestFloorMetrics(t *testing.T) {
	t0 := time.Unix(1000, 0)
	names := []string{"a", "b"}
	returned := []time.Time{t0, t0}
	floor := map[string]time.Time{"a": t0.Add(2 * time.Millisecond), "b": t0.Add(4 * time.Millisecond)}
	seen := map[string]time.Time{"a": t0.Add(12 * time.Millisecond), "b": t0.Add(24 * time.Millisecond)}
	r := Run{Metrics: map[string]float64{}}
	setFloorMetrics(&r, names, returned, floor, seen)
	if r.Metrics[mWatchP99] != 4 || r.Metrics[mAfterP99] != 20 || r.Metrics[mAfterP50] != 10 {
		t.Errorf("metrics = %v, want watch p99 4, after p50 10 and p99 20", r.Metrics)
	}
}

func TestFirstName(t *testing.T) {
	line := []byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b-000042","namespace":"x"},"data":{"name":"other"}}}`)
	if got := firstName(line); got != "b-000042" {
		t.Errorf("firstName = %q, want b-000042", got)
	}
	if got := firstName([]byte(`{"type":"ADDED","object":{"name":"unterminated`)); got != "" {
		t.Errorf("firstName of a cut line = %q, want empty", got)
	}
}

func TestParseMark(t *testing.T) {
	m, err := parseMark("sync 1700000000123456000 12001")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Sync || m.Objects != 12001 || m.At.UnixNano() != 1700000000123456000 {
		t.Errorf("sync mark = %+v", m)
	}
	m, err = parseMark("1700000000123456000 b-000042")
	if err != nil {
		t.Fatal(err)
	}
	if m.Sync || m.Name != "b-000042" || m.At.UnixNano() != 1700000000123456000 {
		t.Errorf("event mark = %+v", m)
	}
	for _, bad := range []string{"", "sync 1 x", "x b-1", "1 2 3 4"} {
		if _, err := parseMark(bad); err == nil {
			t.Errorf("parseMark(%q) should fail", bad)
		}
	}
}

func TestHookOutputPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	o := newHookOutput(path)
	if err := o.poll(); err != nil {
		t.Fatalf("a missing file is no output yet: %v", err)
	}
	appendFile(t, path, "sync 100 2\n200 a\n200 b\n30")
	if err := o.poll(); err != nil {
		t.Fatal(err)
	}
	if len(o.syncs) != 1 || len(o.seen) != 2 || o.runs != 1 {
		t.Fatalf("after the first poll: syncs %v, seen %v, runs %d", o.syncs, o.seen, o.runs)
	}
	appendFile(t, path, "0 c\n300 a\n")
	if err := o.poll(); err != nil {
		t.Fatal(err)
	}
	if o.seen["c"].UnixNano() != 300 || o.seen["a"].UnixNano() != 200 || o.runs != 2 {
		t.Errorf("after the second poll: seen %v, runs %d; want the split line joined and first sightings kept", o.seen, o.runs)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestFullRun(t *testing.T) {
	t.Setenv(referenceEnv, "")
	for _, tc := range []struct {
		args []string
		full bool
	}{
		{nil, true},
		{[]string{"--out", "/tmp/x", "--kubeconfig", "k", "--profile"}, true},
		{[]string{"--scenarios", "trickle,burst"}, false},
		{[]string{"--repeat", "2"}, false},
		{[]string{"--quick"}, false},
		{[]string{"--binary", "/tmp/other"}, false},
		{[]string{"--reference", "none"}, false},
		{[]string{"--hook-tmp-dir", "/dev/shm"}, false},
	} {
		c, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Full(); got != tc.full {
			t.Errorf("%q: Full() = %v, want %v", tc.args, got, tc.full)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Setenv(referenceEnv, "")
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Scenarios, allScenarios) || !slices.Equal(c.Hooks, []string{"bash", "go"}) || c.Repeat != 3 ||
		c.SyncObjects != 12000 || !slices.Equal(c.ScaleSizes, []int{1000, 10000, 100000, 300000}) || c.Reference != "pinned" {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"--quick", "--repeat", "2", "--scenarios", "burst, idle", "--hook", "go"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Repeat != 2 || c.SyncObjects != 1000 || c.BurstObjects != 300 || !slices.Equal(c.ScaleSizes, []int{1000}) ||
		!slices.Equal(c.Scenarios, []string{"idle", "burst"}) || !slices.Equal(c.Hooks, []string{"go"}) {
		t.Errorf("--quick with explicit --repeat: %+v", c)
	}
	for _, bad := range [][]string{{"--scenarios", "idel"}, {"--hook", "python"}, {"--scale-sizes", "10,x"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) should fail", bad)
		}
	}
	if c, err := parseFlags([]string{"--scale-namespace", "kept"}); err != nil || c.ScaleNamespace != "kept" || c.Full() {
		t.Errorf("--scale-namespace kept: %+v, %v; want it set, and not a full run", c, err)
	}
	if c, err := parseFlags([]string{"--burst-rate", "400"}); err != nil || c.BurstRate != 400 || c.Full() || standardBurst(c) {
		t.Errorf("--burst-rate 400: %+v, %v; want it set, not a full run, and no burst targets (they are for creates as fast as they go)", c, err)
	}
	if c, err := parseFlags(nil); err != nil || c.BurstRate != 0 || !standardBurst(c) {
		t.Errorf("defaults: burst rate %d, burst targets apply %v; want 0 (as fast as the API server takes them) and true", c.BurstRate, standardBurst(c))
	}
	if _, err := parseFlags([]string{"--burst-rate", "-1"}); err == nil || !strings.Contains(err.Error(), "--burst-rate=-1: use 0") {
		t.Errorf("--burst-rate -1: %v; want an error saying what to use", err)
	}
	sizes, err := parseSizes("100000, 1000,1000")
	if err != nil || !slices.Equal(sizes, []int{1000, 100000}) {
		t.Errorf("parseSizes = %v, %v; want sorted, without duplicates", sizes, err)
	}
}

// HOOK_OPERATOR_REFERENCE_BIN is --reference's default, and a run beside
// it is not a full run (its report does not become latest.json).
func TestReferenceFromTheEnvironment(t *testing.T) {
	t.Setenv(referenceEnv, "/opt/shell-operator-v1.20.3")
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reference != "/opt/shell-operator-v1.20.3" || c.Full() {
		t.Errorf("with %s set: --reference %q, full run %v; want its path, and not a full run", referenceEnv, c.Reference, c.Full())
	}
	if c, err := parseFlags([]string{"--reference", "pinned"}); err != nil || c.Reference != "pinned" {
		t.Errorf("--reference pinned beside %s: %+v, %v; want the flag to win", referenceEnv, c, err)
	}
}

func testConfig() *Config {
	c, _ := parseFlags([]string{"--repeat", "2"})
	return c
}

// testSubject is a subject for the report's tests: operator is ours or
// reference.
func testSubject(operator, hook string) subject {
	return subject{&implementation{name: operator}, hook}
}

func TestSummarize(t *testing.T) {
	cfg := testConfig()
	run := func(operator, hook string, rep int, rss float64) Run {
		r := newRun("idle", "", testSubject(operator, hook), rep, 0)
		r.Metrics[mRSS] = rss
		return r
	}
	failed := run(ours, "bash", 3, 999)
	failed.Error = "boom"
	profiled := run(ours, "bash", 0, 999)
	profiled.Profiled = true
	s := summarize(cfg, []Run{run(ours, "bash", 1, 20), run(reference, "bash", 1, 70), run(ours, "bash", 2, 24),
		run(reference, "bash", 2, 80), failed, profiled, run(ours, "go", 1, 40)})
	if len(s) != 3 {
		t.Fatalf("summaries: %+v", s)
	}
	b := s[0]
	if b.Operator != ours || b.Hook != "bash" || b.Median != 22 || len(b.Values) != 2 || b.Pass == nil || !*b.Pass {
		t.Errorf("bash: %+v (failed and profiled runs must be left out)", b)
	}
	if b.Reference == nil || *b.Reference != 75 || math.Abs(*b.Ratio-22.0/75) > 1e-9 || *b.RatioTarget != 0.4 || !*b.RatioPass {
		t.Errorf("bash against the reference's median of 75 MB: %+v", b)
	}
	if r := s[1]; r.Operator != reference || r.Target != nil || r.Ratio != nil {
		t.Errorf("the reference's summary has no targets or ratio: %+v", r)
	}
	if g := s[2]; g.Pass == nil || *g.Pass || g.Ratio != nil {
		t.Errorf("go: 40 MB against a 30 MB target must fail, and without a reference there is no ratio: %+v", g)
	}
}

func TestSummarizeQuickHasNoVerdict(t *testing.T) {
	cfg, _ := parseFlags([]string{"--quick"})
	r := newRun("sync", "keepFull=false", testSubject(ours, "bash"), 1, 1000)
	r.Metrics[mSync] = 0.1
	ref := newRun("sync", "keepFull=false", testSubject(reference, "bash"), 1, 1000)
	ref.Metrics[mSync] = 1
	s := summarize(cfg, []Run{r, ref})
	if len(s) != 2 || s[0].Pass != nil || s[0].Target != nil || s[0].RatioPass != nil || s[0].Ratio == nil || *s[0].Ratio != 0.1 {
		t.Errorf("a --quick sync run has a ratio but is not comparable with the 12,000-object targets: %+v", s)
	}
}

func TestPerObject(t *testing.T) {
	var runs []Run
	for _, p := range []struct {
		n          int
		sync, peak float64
	}{{1000, 0.2, 40}, {10000, 0.5, 58}, {100000, 3.5, 238}} {
		r := newRun("scale", "keepFull=false", testSubject(ours, "bash"), 1, p.n)
		r.Metrics[mSync], r.Metrics[mPeakRSS], r.Metrics[mRSSLater] = p.sync, p.peak, p.peak
		runs = append(runs, r)
	}
	got := perObject(summarize(testConfig(), runs))
	if len(got) != 2 {
		t.Fatalf("perObject = %+v, want two slopes", got)
	}
	last := got[1]
	if last.From != 10000 || last.To != 100000 || math.Abs(last.SyncUS-33.33) > 0.01 || math.Abs(last.PeakRSSKB-2.048) > 0.001 {
		t.Errorf("slope 10k→100k = %+v, want 33.33 µs and 2.048 KB per object", last)
	}
	if last.Pass == nil || *last.Pass {
		t.Errorf("2.048 KB per object settled is over the 0.6 KB target: %+v", last)
	}
}

func TestScaleFloorTarget(t *testing.T) {
	cfg := testConfig()
	var runs []Run
	for _, n := range []int{10000, 100000} {
		r := newRun("scale", "keepFull=false", testSubject(ours, "bash"), 1, n)
		r.Metrics[mOverFloor] = 1.5
		runs = append(runs, r)
	}
	s := summarize(cfg, runs)
	if s[0].Target != nil {
		t.Errorf("the floor target is for 100,000 objects only: %+v", s[0])
	}
	if s[1].Target == nil || *s[1].Target != 1.3 || *s[1].Pass {
		t.Errorf("1.5× the floor at 100,000 objects must fail the 1.3× target: %+v", s[1])
	}
}

func TestMarkdown(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios = []string{"idle", "burst", "scale"}
	cfg.ScaleSizes = []int{1000}
	var runs []Run
	for _, hook := range cfg.Hooks {
		for _, op := range []string{ours, reference} {
			f := 1.0
			if op == reference {
				f = 2
			}
			r := newRun("idle", "", testSubject(op, hook), 1, 0)
			r.Metrics[mRSS] = 25 * f
			runs = append(runs, r)
			b := newRun("burst", "", testSubject(op, hook), 1, 3000)
			b.Metrics[mCPUPerEvent], b.Metrics[mP99], b.Metrics[mDrain], b.Metrics[mRate] = 0.3*f, 100*f, 0.1*f, 550
			runs = append(runs, b)
		}
	}
	rep, md := testReport(t, cfg, runs,
		"# hook-operator benchmark, 2026-01-02 03:04 UTC",
		"hook-operator v0; reference shell-operator v1.14.0",
		"| scenario | metric | target | ratio target | bash hook: hook-operator | shell-operator | ratio | go hook: hook-operator | shell-operator | ratio | result |",
		"| idle | RSS after start | ≤ 30.0 MB | ≤ 0.40× | 25.0 MB | 50.0 MB | 0.50× | 25.0 MB | 50.0 MB | 0.50× | FAIL (bash ratio), FAIL (go ratio) |",
		"| burst 3,000 | operator CPU per event | ≤ 0.060 ms | ≤ 0.17× | 0.300 ms | 0.600 ms | 0.50× | 0.300 ms | 0.600 ms | 0.50× | FAIL (bash), FAIL (bash ratio), FAIL (go), FAIL (go ratio) |",
		"| burst 3,000 | last create to last event seen | ≤ 0.30 s |  | 0.10 s | 0.20 s | 0.50× | 0.10 s | 0.20 s | 0.50× | pass |",
		"| burst 3,000 | create rate (not a target) |  |  | 550 /s | 550 /s | 1.00× | 550 /s | 550 /s | 1.00× |  |",
		"| 1,000 | false | — | — | — | — | — |",
	)
	if strings.Contains(md, "| sync") || strings.Contains(md, "| trickle") {
		t.Errorf("scenarios that did not run must not be in the table:\n%s", md)
	}
	rep.Machine.Reference = ""
	if md := rep.Markdown(); !strings.Contains(md, "| scenario | metric | target | bash hook | go hook | result |") {
		t.Errorf("without a reference the table has one column per hook:\n%s", md)
	}
}

// testReport is the report of runs, started 2026-01-02 03:04:05 UTC against
// shell-operator v1.14.0, and its Markdown, which must hold each line of
// want.
func testReport(t *testing.T, cfg *Config, runs []Run, want ...string) (*Report, string) {
	t.Helper()
	rep := &Report{Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Config: cfg, Runs: runs, Summaries: summarize(cfg, runs),
		Machine: Machine{Binary: "hook-operator v0", Reference: "shell-operator v1.14.0"}}
	md := rep.Markdown()
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q:\n%s", w, md)
		}
	}
	return rep, md
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{7: "7", 1000: "1,000", 12000: "12,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHookConfig(t *testing.T) {
	keep := false
	got := string(hookConfig("ns-1", &keep))
	for _, want := range []string{`"configVersion":"v1"`, `"jqFilter":".data"`, `"keepFullObjectsInMemory":false`, `"matchNames":["ns-1"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("hookConfig lacks %s: %s", want, got)
		}
	}
	if strings.Contains(string(hookConfig("ns-1", nil)), "keepFullObjectsInMemory") {
		t.Error("without keepFull the default applies and the key is left out")
	}
}

// The scale table reports peak ÷ settled RSS, with issue 37's target of
// 1.3× at 100,000 and 300,000 objects.
func TestScalePeakOverSettled(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios, cfg.ScaleSizes = []string{"scale"}, []int{10000, 100000, 300000}
	var runs []Run
	for _, n := range cfg.ScaleSizes {
		r := newRun("scale", "keepFull=true", testSubject(ours, cfg.Hooks[0]), 1, n)
		r.Metrics[mPeakRSS], r.Metrics[mRSSLater], r.Metrics[mPeakOver] = 150, 100, 1.5
		runs = append(runs, r)
	}
	s := summarize(cfg, runs)
	for _, sum := range s {
		if sum.Metric != mPeakOver {
			continue
		}
		if sum.Objects == 10000 && sum.Target != nil {
			t.Errorf("the peak target is for 100,000 and 300,000 objects only: %+v", sum)
		}
		if sum.Objects != 10000 && (sum.Target == nil || *sum.Target != 1.3 || *sum.Pass) {
			t.Errorf("a peak 1.5× the settled RSS at %d objects must fail the 1.3× target: %+v", sum.Objects, sum)
		}
	}
	r := &Report{Config: cfg, Summaries: s}
	var b strings.Builder
	r.writeScale(&b)
	if !strings.Contains(b.String(), "| peak ÷ settled |") || !strings.Contains(b.String(), "| 1.50× (FAIL) |") {
		t.Errorf("the scale table lacks the peak ÷ settled column or its verdict:\n%s", b.String())
	}
}
