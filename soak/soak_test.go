package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGrowthFitsSlopeAsFractionOfMean(t *testing.T) {
	var ts []time.Duration
	var flat, growing, noisy []float64
	for i := range 61 { // an hour, a sample a minute
		ts = append(ts, time.Duration(i)*time.Minute)
		flat = append(flat, 100)
		growing = append(growing, 100+10*float64(i)/60) // 100 → 110 in an hour
		noisy = append(noisy, 100+float64(i%2)*4)       // alternating, no trend
	}
	if g, ok := pooledGrowth([]segment{{ts, flat}}); !ok || g != 0 {
		t.Errorf("flat: growth = %v, %v; want 0, true", g, ok)
	}
	// Slope 10/h over a mean of 105: 9.52% per hour.
	if g, ok := pooledGrowth([]segment{{ts, growing}}); !ok || math.Abs(g-10.0/105) > 1e-9 {
		t.Errorf("growing: growth = %v, %v; want %v", g, ok, 10.0/105)
	}
	if g, _ := pooledGrowth([]segment{{ts, noisy}}); math.Abs(g) > 0.005 {
		t.Errorf("noisy without trend: growth = %v; want about 0", g)
	}
	if _, ok := pooledGrowth([]segment{{ts[:2], flat[:2]}}); ok {
		t.Error("two samples: fitted; want too few")
	}
}

func TestJudgeGrowthAppliesTheBound(t *testing.T) {
	ts := []time.Duration{0, 30 * time.Minute, time.Hour}
	if v := judgePooled("rss", []segment{{ts, []float64{100, 102, 104}}}, maxGrowthPerHour); !v.Pass {
		t.Errorf("4%% per hour: failed (%s); want pass under the 5%% bound", v.Reason)
	}
	v := judgePooled("rss", []segment{{ts, []float64{100, 104, 108}}}, maxGrowthPerHour)
	if v.Pass || !strings.Contains(v.Reason, "above the bound of 5.0%") {
		t.Errorf("about 7.7%% per hour: pass=%v reason %q; want a failure naming the bound", v.Pass, v.Reason)
	}
	if v := judgePooled("children", []segment{{ts, []float64{0, 0, 0}}}, maxGrowthPerHour); !v.Pass {
		t.Errorf("all zero: failed (%s); want pass", v.Reason)
	}
	if v := judgePooled("rss", []segment{{ts[:1], []float64{1}}}, maxGrowthPerHour); v.Pass || !strings.Contains(v.Reason, "too few") {
		t.Errorf("one sample: pass=%v reason %q; want a failure saying too few", v.Pass, v.Reason)
	}
}

// A window long enough is held to 5 % an hour; a shorter one to what the
// wander alone reads as over it (1.5 times the wander over its length), so
// that windows of a few minutes cannot fail a flat process.
func TestGrowthBoundFollowsTheWindow(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		want   float64
	}{
		{2 * time.Hour, maxGrowthPerHour},
		{time.Hour, maxGrowthPerHour},
		{30 * time.Minute, 1.5 * wander * 2},
		{20 * time.Minute, 1.5 * wander * 3},
		{5 * time.Minute, 1.5 * wander * 12},
		{0, maxGrowthPerHour},
	} {
		if got := growthBound(tc.window); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("growthBound(%s) = %.4f; want %.4f", tc.window, got, tc.want)
		}
	}
	if w := fullBoundWindow(); w.Round(time.Minute) != 58*time.Minute || math.Abs(growthBound(w)-maxGrowthPerHour) > 1e-9 {
		t.Errorf("fullBoundWindow() = %s, bound there %.4f; want 58 minutes, the first held to 5%%", w, growthBound(w))
	}
}

func TestScheduleCoversEveryKindAfterWarmup(t *testing.T) {
	got, err := schedule(30*time.Minute, 5*time.Minute, 2*time.Minute, 2*time.Minute+30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[faultKind]bool{}
	for i, f := range got {
		seen[f.Kind] = true
		if f.At < 5*time.Minute || f.At >= 28*time.Minute {
			t.Errorf("fault %d at %s: outside [warm-up, end - tail)", i, f.At)
		}
		if i > 0 && f.At <= got[i-1].At {
			t.Errorf("fault %d at %s: not after the one before (%s)", i, f.At, got[i-1].At)
		}
	}
	if len(got) != 9 || len(seen) != len(faultOrder) {
		t.Errorf("30m: %d faults of %d kinds; want 9 of all %d", len(got), len(seen), len(faultOrder))
	}
	// A short run still gets one of each kind, closer together.
	short, err := schedule(5*time.Minute, 50*time.Second, 2*time.Minute, 2*time.Minute+30*time.Second)
	if err != nil || len(short) != len(faultOrder) {
		t.Errorf("5m: %d faults, %v; want %d", len(short), err, len(faultOrder))
	}
	if _, err := schedule(2*time.Minute, time.Minute, 2*time.Minute, time.Minute); err == nil || !strings.Contains(err.Error(), "SOAK_DURATION") {
		t.Errorf("too short: %v; want an error that says to raise SOAK_DURATION", err)
	}
}

func TestTwiceHandledOnlyOutsideFaultWindows(t *testing.T) {
	runs := map[string][]handling{
		"soak-0": {{10 * time.Second, "replica-0"}, {20 * time.Second, "replica-1"}},   // hand-over in a window
		"soak-1": {{100 * time.Second, "replica-0"}, {110 * time.Second, "replica-2"}}, // outside: a violation
		"soak-2": {{100 * time.Second, "replica-1"}, {110 * time.Second, "replica-1"}}, // same replica
	}
	window := func(from, to time.Duration) bool { return from < 60*time.Second }
	got := twiceHandled(runs, window)
	if len(got) != 1 || !strings.HasPrefix(got[0], "soak-1: replica-0") {
		t.Errorf("twiceHandled = %q; want only soak-1's hand-over", got)
	}
}

func TestJudgeSamplesFitsEachProcessAfterItsWarmup(t *testing.T) {
	var samples []sample
	for i := range 120 { // 20 minutes, 10 s apart
		at := time.Duration(i) * 10 * time.Second
		rss := int64(50 << 20)
		if at < 5*time.Minute {
			rss = int64(10<<20) + int64(i)<<20 // warm-up growth, not judged
		}
		samples = append(samples, sample{At: at, Replica: "replica-0", Pid: 7, Proc: procSample{RSS: rss, FDs: 20}, Goroutines: 80, HeapLive: float64(rss / 2)})
		// A process started at 15 minutes has too short a run to judge.
		if at >= 15*time.Minute {
			samples = append(samples, sample{At: at, Replica: "replica-1", Pid: 9, Started: 15 * time.Minute, Proc: procSample{RSS: rss}})
		}
	}
	got := judgeSamples(samples, 5*time.Minute)
	if len(got) != 4 {
		t.Fatalf("judgeSamples gave %d verdicts, want 4 (RSS, heap, goroutines, fds of pid 7 only): %+v", len(got), got)
	}
	for _, v := range got {
		if !v.Pass || !strings.Contains(v.Series, "pid 7") {
			t.Errorf("%+v: want a pass for pid 7 (flat after warm-up)", v)
		}
	}
	rep := &report{Samples: []sample{
		{At: 0, Pid: 7, Replica: "replica-0", Proc: procSample{Zombies: 1}},
		{At: 5 * time.Second, Pid: 7, Replica: "replica-0"},
		{At: 10 * time.Second, Pid: 7, Replica: "replica-0", Proc: procSample{Zombies: 1}},
		{At: 15 * time.Second, Pid: 7, Replica: "replica-0", Proc: procSample{Zombies: 2}},
	}}
	if z := rep.zombies(); len(z) != 1 || !strings.Contains(z[0], "15s") {
		t.Errorf("zombies = %q; want one, at 15s (two samples in a row)", z)
	}
}

func TestReportWritesSummaryAndPlots(t *testing.T) {
	rep := &report{Duration: 10 * time.Minute, Warmup: time.Minute,
		Faults:      []faultRecord{{Kind: faultKill, Target: "replica-1", At: 2 * time.Minute, Done: 2 * time.Minute, Converge: 3 * time.Second}},
		Checkpoints: []checkpoint{{At: 3 * time.Minute, Converge: time.Second, OK: true}, {At: 4 * time.Minute, After: faultKill, Converge: -1, Detail: "not converged"}},
		Webhook:     webhookTally{Probes: 4, Correct: 4},
	}
	for i := range 60 {
		rep.Samples = append(rep.Samples, sample{At: time.Duration(i) * 10 * time.Second, Replica: "replica-0", Pid: 1,
			Proc: procSample{RSS: 40 << 20, RSSAnon: 21 << 20, RSSFile: 19 << 20, FDs: 12}, Goroutines: 50, Queue: float64(i % 3),
			Mem: goMem{HeapInuse: 9 << 20, HeapIdle: 4 << 20, HeapReleased: 3 << 20, StackInuse: 1 << 20, Sys: 17 << 20}})
	}
	rep.judge()
	if rep.Pass {
		t.Fatal("a report with an unconverged checkpoint passed")
	}
	dir := t.TempDir()
	path, err := rep.write(dir, time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	memRow := "| 9m50s | 40.00 | 21.00 | 19.00 | 9.00 | 1.00 | 3.00 | 1.00 | 17.00 |" // the window's end: RSS, RssAnon, RssFile, heap in use, kept, released, stacks, mapped
	for _, want := range []string{"# Soak: FAIL", "| 2m0s | kill-replica | replica-1 | 3s |", "not converged", "2026-11-26T23-00-00Z-rss.png", "2026-11-26T23-00-00Z-convergence.png", memRow} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	for _, p := range []string{"rss", "goroutines", "queue", "convergence"} {
		if st, err := os.Stat(filepath.Join(dir, "2026-11-26T23-00-00Z-"+p+".png")); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
}

// In a long run, a process's first 10 minutes are not fitted: a replica's
// RSS rises by about 2 MB then, while its heap stays flat, and a fit over
// the rise reads as a growth of 15-25% per hour. A rise after that fails.
func TestJudgeSamplesLeavesOutAProcesssFirstTenMinutes(t *testing.T) {
	judge := func(rise func(age time.Duration) int64) []verdict {
		var samples []sample
		for i := range 480 { // 40 minutes, 5 s apart
			at := time.Duration(i) * 5 * time.Second
			samples = append(samples, sample{At: at, Replica: "replica-0", Pid: 7, Proc: procSample{RSS: 26<<20 + rise(at), FDs: 30}, Goroutines: 110, HeapLive: 4 << 20})
		}
		return judgeSamples(samples, 5*time.Minute)
	}
	settling := func(age time.Duration) int64 { return min(int64(age/time.Minute), 10) * 200 << 10 }
	for _, v := range judge(settling) {
		if !v.Pass {
			t.Errorf("RSS rising 2 MB over a process's first 10 minutes, flat after: %+v, want a pass", v)
		}
	}
	leaking := func(age time.Duration) int64 { return int64(age/time.Minute) * 100 << 10 } // 6 MB/h
	failed := false
	for _, v := range judge(leaking) {
		failed = failed || (!v.Pass && strings.Contains(v.Series, "RSS"))
	}
	if !failed {
		t.Error("RSS growing 6 MB/h the whole run passed")
	}
}

// A replica's processes are fitted together: one slope, each process at
// its own level. A replica restarted at a lower RSS is not a fall, and one
// started higher is not a rise; processes each growing from their own
// level fail even when no single one lived long enough to judge alone, at
// the bound that their 10-minute windows can tell (growthBound): 3 MB/h
// (about 9 %/h) is within the wander of such windows, 15 MB/h is not.
func TestJudgeSamplesPoolsAReplicasProcesses(t *testing.T) {
	judge := func(level func(pid int) int64, perHour int64) []verdict {
		var samples []sample
		for i := range 720 { // 60 minutes, 5 s apart; a new process every 20 minutes
			at := time.Duration(i) * 5 * time.Second
			pid := 100 + int(at/(20*time.Minute))
			started := time.Duration(pid-100) * 20 * time.Minute
			rss := level(pid) + int64(float64(perHour)*(at-started).Hours())
			samples = append(samples, sample{At: at, Replica: "replica-0", Pid: pid, Started: started,
				Proc: procSample{RSS: rss, RSSAnon: rss / 2, FDs: 30}, Goroutines: 110, HeapLive: 4 << 20})
		}
		return judgeSamples(samples, 5*time.Minute)
	}
	rssVerdict := func(vs []verdict) verdict {
		for _, v := range vs {
			if strings.HasSuffix(v.Series, " RSS") {
				return v
			}
		}
		t.Fatalf("no RSS verdict in %+v", vs)
		return verdict{}
	}
	falling := func(pid int) int64 { return int64(40-4*(pid-100)) << 20 } // each restart 4 MB lower
	if v := rssVerdict(judge(falling, 0)); !v.Pass || math.Abs(v.PerHour) > 1e-9 || !strings.Contains(v.Series, "pid 100") || !strings.Contains(v.Series, "pid 102") {
		t.Errorf("flat processes at falling levels: %+v, want a pass at 0%%/h naming all three", v)
	}
	rising := func(pid int) int64 { return int64(30+4*(pid-100)) << 20 }
	if v := rssVerdict(judge(rising, 0)); !v.Pass {
		t.Errorf("flat processes at rising levels: %+v, want a pass", v)
	}
	v := rssVerdict(judge(falling, 3<<20)) // 3 MB/h in each, about 9%/h
	if !v.Pass || v.PerHour < 0.07 || v.PerHour > 0.1 || math.Abs(v.Bound-growthBound(10*time.Minute)) > 0.01 {
		t.Errorf("each process growing 3 MB/h over 10-minute windows: %+v, want a pass at about 9%%/h, under the bound of 10-minute windows", v)
	}
	v = rssVerdict(judge(falling, 15<<20)) // 15 MB/h in each, about 45%/h
	if v.Pass || v.PerHour < 0.3 {
		t.Errorf("each process growing 15 MB/h: %+v, want a failure", v)
	}
}

// A process whose first samples have no metrics yet (its listener not up)
// is still one window, fitted once.
func TestFitWindowsCountsAProcessOnce(t *testing.T) {
	var samples []sample
	for i := range 300 { // 25 minutes, 5 s apart
		at := time.Duration(i) * 5 * time.Second
		samples = append(samples, sample{At: at, Replica: "replica-2", Pid: 18110, MetricsErr: i < 3, Proc: procSample{RSS: 27 << 20}})
	}
	if ws := fitWindows(samples, 5*time.Minute); len(ws) != 1 {
		t.Errorf("fitWindows = %d windows, want 1: %+v", len(ws), ws)
	}
}

// rejudge applies this build's bounds to a saved run: the old growth
// verdicts and failures are replaced, the other records kept, and the
// summary, JSON and plots written again beside the JSON.
func TestRejudgeRewritesASavedRun(t *testing.T) {
	var samples []sample
	for i := range 960 { // 80 minutes, 5 s apart, one flat process: a 70-minute window
		samples = append(samples, sample{At: time.Duration(i) * 5 * time.Second, Replica: "replica-0", Pid: 100,
			Proc: procSample{RSS: 28 << 20, FDs: 30}, Goroutines: 110, HeapLive: 3 << 20})
	}
	old := report{Duration: 80 * time.Minute, Warmup: 5 * time.Minute, Samples: samples, Webhook: webhookTally{Probes: 1, Correct: 1},
		Growth:   []verdict{{Series: "replica-0 RSS", Fitted: true, Reason: "an old verdict"}},
		Failures: []string{"growth: replica-0 RSS: an old verdict"}}
	path := filepath.Join(t.TempDir(), "2026-11-27T00-00-00Z.json")
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rejudge(path); err != nil {
		t.Fatal(err)
	}
	rep, err := loadRejudged(path)
	if err != nil {
		t.Fatal(err)
	}
	summary := strings.TrimSuffix(path, ".json") + ".md"
	if !rep.Pass || len(rep.Failures) != 0 || len(rep.Growth) != 4 || rep.Growth[0].Bound != maxGrowthPerHour {
		t.Errorf("rejudged: pass %v, failures %v, growth %+v; want a pass with 4 fresh verdicts at the 5%% bound", rep.Pass, rep.Failures, rep.Growth)
	}
	md, err := os.ReadFile(summary)
	if err != nil || !strings.HasPrefix(string(md), "# Soak: PASS") {
		t.Errorf("summary %s: %v, %.40q", summary, err, md)
	}
	var saved report
	if data, err = os.ReadFile(path); err == nil {
		err = json.Unmarshal(data, &saved)
	}
	if err != nil || !saved.Pass {
		t.Errorf("the JSON rewritten: %v, pass %v", err, saved.Pass)
	}
}

// A 5-minute soak cannot tell settling from growth: its report says it is
// too short to judge growth, shows the figures, and passes or fails on the
// other checks alone. The same samples in a 30-minute run are judged, and
// fail.
func TestShortRunIsTooShortToJudgeGrowth(t *testing.T) {
	run := func(d time.Duration, converged bool) *report {
		rep := &report{Duration: d, Warmup: time.Minute, Webhook: webhookTally{Probes: 116, Correct: 116},
			Checkpoints: []checkpoint{{At: 2 * time.Minute, Converge: time.Second, OK: converged, Detail: "not converged"}}}
		for i := range 60 { // 5 minutes, 5 s apart: RSS settling from 25.7 MiB, read as growth of about 100 %/h
			at := time.Duration(i) * 5 * time.Second
			rss := int64((25.7 + 2.4*float64(i)/59) * (1 << 20))
			rep.Samples = append(rep.Samples, sample{At: at, Replica: "replica-0", Pid: 1, Proc: procSample{RSS: rss, FDs: 20}, Goroutines: 90, HeapLive: 4 << 20})
		}
		rep.Growth = judgeSamples(rep.Samples, rep.Warmup)
		rep.judge()
		return rep
	}
	short := run(5*time.Minute, true)
	if !short.Pass || short.growthJudged() {
		t.Fatalf("a 5-minute run with every other check passing: pass %v, growth judged %v, failures %q; want a pass, growth not judged", short.Pass, short.growthJudged(), short.Failures)
	}
	var rss *verdict
	for i, g := range short.Growth {
		if strings.Contains(g.Series, "RSS") {
			rss = &short.Growth[i]
		}
	}
	if rss == nil || rss.Pass || rss.PerHour < 0.9 {
		t.Fatalf("the short run's RSS fit: %+v; want its figure, a rise of more than 90 %%/h, beyond its bound", rss)
	}
	md := short.markdown(nil)
	for _, want := range []string{"# Soak: PASS", "**Too short to judge growth**: a run of 5m0s", "judged in runs of 30m0s or more", fmt.Sprintf("%+.2f%%", 100*rss.PerHour), "not judged: grows"} {
		if !strings.Contains(md, want) {
			t.Errorf("the short run's summary lacks %q:\n%s", want, md)
		}
	}
	if failed := run(5*time.Minute, false); failed.Pass || len(failed.Failures) != 1 || !strings.Contains(failed.Failures[0], "convergence") {
		t.Errorf("a 5-minute run with a checkpoint not converged: pass %v, failures %q; want a failure on convergence alone", failed.Pass, failed.Failures)
	}
	long := run(30*time.Minute, true)
	if long.Pass || !long.growthJudged() || !slices.ContainsFunc(long.Failures, func(f string) bool { return strings.HasPrefix(f, "growth: ") }) {
		t.Errorf("the same samples in a 30-minute run: pass %v, failures %q; want growth judged, and failed", long.Pass, long.Failures)
	}
}
