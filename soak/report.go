package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// report is what a soak found.
type report struct {
	Duration    time.Duration
	Warmup      time.Duration
	Faults      []faultRecord
	Checkpoints []checkpoint
	Samples     []sample
	Webhook     webhookTally
	Churn       map[string]int
	ChurnErrors int
	Twice       []string // namespaces handled by two replicas outside a fault window
	Panics      []string
	Exits       []string // replicas that exited by themselves (restarted by the harness)
	Growth      []verdict
	Problems    []string
	Failures    []string
	Pass        bool
}

// report gathers the run's records and judges them.
func (s *soak) report(warmup time.Duration) *report {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := &report{Duration: s.since(), Warmup: warmup, Faults: s.faults, Checkpoints: s.checkpoints,
		Samples: s.samples, Webhook: s.webhook, Problems: s.problems}
	rep.Churn, rep.ChurnErrors = s.churn.totals()
	for _, r := range s.replicas {
		r.mu.Lock()
		rep.Exits = append(rep.Exits, r.exits...)
		for _, p := range r.panics {
			rep.Panics = append(rep.Panics, r.id+": "+p)
		}
		r.mu.Unlock()
	}
	handled, err := readHandled(s.dir, s.start, s.replicas)
	if err != nil {
		rep.Problems = append(rep.Problems, "the hook's handled logs: "+err.Error())
	}
	rep.Twice = twiceHandled(handled, func(from, to time.Duration) bool { return s.inFaultWindow(from, to) })
	rep.Growth = judgeSamples(s.samples, warmup)
	rep.judge()
	return rep
}

// A handling is one run of the hook on one replica over a namespace.
type handling struct {
	At      time.Duration
	Replica string
}

// readHandled reads the hook's handled-<replica>.log files into runs per
// namespace, in time order.
func readHandled(dir string, start time.Time, rs []*replica) (map[string][]handling, error) {
	out := map[string][]handling{}
	for _, r := range rs {
		f, err := os.Open(filepath.Join(dir, "handled-"+r.id+".log"))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			ts, err := strconv.ParseFloat(fields[0], 64)
			if err != nil {
				continue // a locale with a decimal comma: EPOCHREALTIME's mark
			}
			at := time.Unix(0, int64(ts*1e9)).Sub(start)
			for _, ns := range fields[2:] {
				out[ns] = append(out[ns], handling{At: at, Replica: fields[1]})
			}
		}
		f.Close()
	}
	for _, h := range out {
		sort.Slice(h, func(i, j int) bool { return h[i].At < h[j].At })
	}
	return out, nil
}

// twiceHandled returns the namespaces whose runs passed from one replica
// to another with no fault window between the two runs: two replicas
// handled the same objects outside a takeover.
func twiceHandled(runs map[string][]handling, inWindow func(from, to time.Duration) bool) []string {
	var out []string
	for ns, h := range runs {
		for i := 1; i < len(h); i++ {
			if h[i].Replica != h[i-1].Replica && !inWindow(h[i-1].At, h[i].At) {
				out = append(out, fmt.Sprintf("%s: %s at %s, then %s at %s", ns, h[i-1].Replica, h[i-1].At.Round(time.Second), h[i].Replica, h[i].At.Round(time.Second)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// minFitSpan is the least time that a replica's processes' samples after
// their warm-up must span, all together, for a growth verdict.
const minFitSpan = 10 * time.Minute

// minProcessSpan is the least time a process's samples after its warm-up
// must span to be part of its replica's fit.
const minProcessSpan = 2 * time.Minute

// processWarmup is how long a process runs before its resources are
// fitted. A replica's RSS rises over its first minutes while its Go heap
// stays flat: the binary's pages are read in as its code runs for the
// first time (RssFile, bounded by the binary's size), and the runtime's
// own structures settle (soak results of 2026-11-27), and a fit over that
// rise reads as growth.
const processWarmup = 10 * time.Minute

// minGrowthRun is the shortest run whose resource growth is judged: the
// run in which each process is left its whole processWarmup to settle
// (fitWindows cuts that to a third of a shorter run). In a shorter run the
// fit spans the settling itself, and reads it as growth: a 5-minute soak
// fitted one replica over 3 minutes, RSS 25.7 → 26.5 MiB, as +99 % an
// hour. Its figures are shown, and not judged.
const minGrowthRun = 3 * processWarmup

// growthJudged reports whether the run was long enough to judge growth.
func (rep *report) growthJudged() bool { return rep.Duration >= minGrowthRun }

// judgeSamples fits the growth of RSS, the live heap, goroutines and open
// fds of each replica over its processes' samples after their
// warm-up (fitWindows): one slope for all the processes of the replica,
// each with its own level, since a restarted replica starts lower
// (pooledGrowth), held to the bound its longest window can tell
// (growthBound). A replica whose windows span less than minFitSpan (or
// a third of the run, if shorter) in all has no verdict: faults leave few
// long-lived processes.
func judgeSamples(samples []sample, warmup time.Duration) []verdict {
	var replicas []string
	byReplica := map[string][]fitWindow{}
	for _, w := range fitWindows(samples, warmup) {
		if _, ok := byReplica[w.Replica]; !ok {
			replicas = append(replicas, w.Replica)
		}
		byReplica[w.Replica] = append(byReplica[w.Replica], w)
	}
	span := min(minFitSpan, runEnd(samples)/3)
	var out []verdict
	for _, id := range replicas {
		ws := byReplica[id]
		var covered, longest time.Duration
		var procs []string
		var rss, heap, gr, fds []segment
		for _, w := range ws {
			span := w.Samples[len(w.Samples)-1].At - w.Samples[0].At
			covered, longest = covered+span, max(longest, span)
			procs = append(procs, w.Name)
			var t []time.Duration
			var r, h, g, f []float64
			for _, smp := range w.Samples {
				t = append(t, smp.At)
				r, h = append(r, float64(smp.Proc.RSS)), append(h, smp.HeapLive)
				g, f = append(g, smp.Goroutines), append(f, float64(smp.Proc.FDs))
			}
			rss, heap = append(rss, segment{t, r}), append(heap, segment{t, h})
			gr, fds = append(gr, segment{t, g}), append(fds, segment{t, f})
		}
		if covered < span {
			continue
		}
		name := fmt.Sprintf("%s (%s)", id, strings.Join(procs, "; "))
		bound := growthBound(longest)
		out = append(out, judgePooled(name+" RSS", rss, bound), judgePooled(name+" Go heap live", heap, bound),
			judgePooled(name+" goroutines", gr, bound), judgePooled(name+" open fds", fds, bound))
	}
	return out
}

// runEnd is the time of the last sample.
func runEnd(samples []sample) time.Duration {
	var end time.Duration
	for _, smp := range samples {
		end = max(end, smp.At)
	}
	return end
}

// A fitWindow is one process's samples that its growth is fitted over.
type fitWindow struct {
	Replica string
	Name    string // pid and the window's bounds
	Samples []sample
}

// fitWindows picks, per process, its samples after the soak's warm-up and
// its own (processWarmup, or a third of the run if shorter), leaving out
// the processes whose samples then span less than minProcessSpan.
func fitWindows(samples []sample, warmup time.Duration) []fitWindow {
	type key struct {
		replica string
		pid     int
	}
	byProc := map[key][]sample{}
	var keys []key
	seen := map[key]bool{}
	for _, smp := range samples {
		k := key{smp.Replica, smp.Pid}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		if !smp.MetricsErr {
			byProc[k] = append(byProc[k], smp)
		}
	}
	procWarmup := min(processWarmup, runEnd(samples)/3)
	var out []fitWindow
	for _, k := range keys {
		var w []sample
		for _, smp := range byProc[k] {
			if smp.At >= max(warmup, smp.Started+procWarmup) {
				w = append(w, smp)
			}
		}
		if len(w) < 3 || w[len(w)-1].At-w[0].At < minProcessSpan {
			continue
		}
		name := fmt.Sprintf("pid %d, %s to %s", k.pid, w[0].At.Round(time.Second), w[len(w)-1].At.Round(time.Second))
		out = append(out, fitWindow{Replica: k.replica, Name: name, Samples: w})
	}
	return out
}

// memoryTable shows, for each fitted process, where its memory was at the
// start and at the end of its window, so that an RSS rise can be told
// apart: the Go heap's objects, free heap the runtime keeps, stacks, or
// the binary's pages (RssFile).
func memoryTable(samples []sample, warmup time.Duration) string {
	ws := fitWindows(samples, warmup)
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| process | at | RSS | RssAnon | RssFile | heap in use | heap free, kept | heap free, released | stacks | Go runtime, all mapped |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	mib := func(v float64) string { return fmt.Sprintf("%.2f", v/(1<<20)) }
	for _, w := range ws {
		for _, smp := range []sample{w.Samples[0], w.Samples[len(w.Samples)-1]} {
			m := smp.Mem
			fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w.Replica, w.Name, smp.At.Round(time.Second),
				mib(float64(smp.Proc.RSS)), mib(float64(smp.Proc.RSSAnon)), mib(float64(smp.Proc.RSSFile)),
				mib(m.HeapInuse), mib(m.HeapIdle-m.HeapReleased), mib(m.HeapReleased), mib(m.StackInuse), mib(m.Sys))
		}
	}
	return b.String()
}

// judge lists the failed checks.
func (rep *report) judge() {
	for _, c := range rep.Checkpoints {
		if !c.OK {
			rep.Failures = append(rep.Failures, fmt.Sprintf("convergence at %s (after %q): %s", c.At.Round(time.Second), c.After, c.Detail))
		}
	}
	if rep.Webhook.Wrong > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("the webhook answered wrongly %d time(s) outside fault windows: %v", rep.Webhook.Wrong, rep.Webhook.WrongExamples))
	}
	if rep.Webhook.Correct == 0 {
		rep.Failures = append(rep.Failures, "the webhook never answered correctly")
	}
	for _, t := range rep.Twice {
		rep.Failures = append(rep.Failures, "handled by two replicas outside a takeover: "+t)
	}
	for _, p := range rep.Panics {
		rep.Failures = append(rep.Failures, "panic in a log: "+p)
	}
	fitted := 0
	for _, g := range rep.Growth {
		if g.Fitted {
			fitted++
		}
		if !g.Pass && rep.growthJudged() {
			rep.Failures = append(rep.Failures, "growth: "+g.Series+": "+g.Reason)
		}
	}
	if fitted == 0 && rep.growthJudged() {
		rep.Failures = append(rep.Failures, "growth: no process ran long enough after warm-up to fit")
	}
	for _, z := range rep.zombies() {
		rep.Failures = append(rep.Failures, "zombie: "+z)
	}
	for _, p := range rep.Problems {
		if !slices.ContainsFunc(rep.Failures, func(f string) bool { return strings.Contains(f, p) }) {
			rep.Failures = append(rep.Failures, p)
		}
	}
	rep.Pass = len(rep.Failures) == 0
}

// zombies lists the processes that had zombie children in two samples in a
// row (one sample may catch a hook between its exit and its reaping).
func (rep *report) zombies() []string {
	last := map[int]int{}
	var out []string
	for _, smp := range rep.Samples {
		if smp.Proc.Zombies > 0 && last[smp.Pid] > 0 {
			out = append(out, fmt.Sprintf("%s (pid %d): %d zombie child(ren) at %s", smp.Replica, smp.Pid, smp.Proc.Zombies, smp.At.Round(time.Second)))
		}
		last[smp.Pid] = smp.Proc.Zombies
	}
	return out
}

// write writes <time>.md, <time>.json and the plots into dir, and returns
// the summary's path.
func (rep *report) write(dir string, start time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return rep.writeStem(filepath.Join(dir, start.UTC().Format("2006-01-02T15-04-05Z")))
}

// writeStem writes <stem>.md, <stem>.json and the plots, and returns the
// summary's path.
func (rep *report) writeStem(stem string) (string, error) {
	data, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(stem+".json", data, 0o644); err != nil {
		return "", err
	}
	plots, err := rep.plots(stem)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(stem+".md", []byte(rep.markdown(plots)), 0o644); err != nil {
		return "", err
	}
	return stem + ".md", nil
}

func (rep *report) markdown(plots []string) string {
	var b strings.Builder
	verdict := "PASS"
	if !rep.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# Soak: %s\n\n%s with 3 replicas (`--sharding --shard-by namespace`), the mirror hook and its validating webhook; warm-up %s. Bounds: convergence within %s of a fault's end; "+
		"outside a fault's window (its start to its convergence, plus %s), no namespace handled by two replicas and no wrong webhook answer; "+
		"after warm-up, RSS, goroutines and open fds grow at most %.0f%% of their mean per hour where the replica's longest window can tell that from their wander, else what the wander can read as (least-squares slope per replica, over its processes from %s after each one's start, each process at its own level); no zombie in two samples in a row; "+
		"no hook process, and at most %d run dirs (the ones the operator keeps), left a minute after the end. See docs/soak.md.\n\n",
		verdict, rep.Duration.Round(time.Second), rep.Warmup, convergeBound, takeoverSlack, 100*maxGrowthPerHour, min(processWarmup, rep.Duration/3), keptRunDirs)
	fmt.Fprintf(&b, "Churn: %v (%d failed, during faults).\n\n", rep.Churn, rep.ChurnErrors)
	b.WriteString("## Faults\n\n| at | fault | target | converged after |\n| --- | --- | --- | --- |\n")
	longest := map[faultKind]time.Duration{}
	for _, f := range rep.Faults {
		conv := "**not within bound**"
		if f.Converge >= 0 {
			conv = f.Converge.Round(100 * time.Millisecond).String()
			longest[f.Kind] = max(longest[f.Kind], f.Converge)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.At.Round(time.Second), f.Kind, f.Target, conv)
	}
	b.WriteString("\nLongest convergence per kind:")
	for _, k := range faultOrder {
		if d, ok := longest[k]; ok {
			fmt.Fprintf(&b, " %s %s;", k, d.Round(100*time.Millisecond))
		}
	}
	var between time.Duration
	n := 0
	for _, c := range rep.Checkpoints {
		if c.After == "" && c.OK {
			between, n = max(between, c.Converge), n+1
		}
	}
	fmt.Fprintf(&b, " between faults (%d checkpoints) %s.\n\n", n, between.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "## Webhook\n\n%d probes: %d correct, %d failed inside a fault window (stated unavailability), %d wrong outside.\n\n",
		rep.Webhook.Probes, rep.Webhook.Correct, rep.Webhook.Unavailable, rep.Webhook.Wrong)
	b.WriteString("## Resource growth after warm-up\n\n")
	if !rep.growthJudged() {
		fmt.Fprintf(&b, "**Too short to judge growth**: a run of %s. Growth is judged in runs of %s or more, where each process is left %s to settle before its samples are fitted; "+
			"in a shorter run the fit spans the settling, which reads as growth. The figures, not judged:\n\n", rep.Duration.Round(time.Second), minGrowthRun, processWarmup)
	}
	fmt.Fprintf(&b, "Each replica is held to %.0f %% an hour where its longest window is long enough to tell that from the wander of a flat series (%s), "+
		"and to what the wander alone can read as where it is shorter (docs/soak.md).\n\n| series | growth per hour | bound | verdict |\n| --- | --- | --- | --- |\n",
		100*maxGrowthPerHour, fullBoundWindow().Round(time.Minute))
	for _, g := range rep.Growth {
		v := "ok"
		switch {
		case !rep.growthJudged() && !g.Pass:
			v = "not judged: " + g.Reason
		case !rep.growthJudged():
			v = "not judged"
		case !g.Pass:
			v = "**" + g.Reason + "**"
		}
		fmt.Fprintf(&b, "| %s | %+.2f%% | %.1f%% | %s |\n", g.Series, 100*g.PerHour, 100*g.Bound, v)
	}
	if t := memoryTable(rep.Samples, rep.Warmup); t != "" {
		b.WriteString("\nWhere each fitted process's memory was at its window's start and end (MiB; the Go runtime's figures from its go_memstats_* series):\n\n" + t)
	}
	fmt.Fprintf(&b, "\n## Exits\n\n%d replica exit(s) not caused by the harness (each restarted a second later, as the kubelet would):\n\n", len(rep.Exits))
	for _, e := range rep.Exits {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	b.WriteString("\n## Failures\n\n")
	if len(rep.Failures) == 0 {
		b.WriteString("None.\n")
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	b.WriteString("\n## Plots (faults marked by vertical lines)\n\n")
	for _, p := range plots {
		fmt.Fprintf(&b, "![%s](%s)\n\n", p, p)
	}
	return b.String()
}

// plots draws RSS, goroutines and queue length per replica, and the
// convergence times, over the run, with each fault a vertical line.
func (rep *report) plots(stem string) ([]string, error) {
	type series struct {
		file, title, y string
		value          func(sample) float64
	}
	var names []string
	for _, sr := range []series{
		{"rss", "RSS per replica", "MiB", func(s sample) float64 { return float64(s.Proc.RSS) / (1 << 20) }},
		{"heap", "Go heap live after the last collection, per replica", "MiB", func(s sample) float64 { return s.HeapLive / (1 << 20) }},
		{"goroutines", "Goroutines per replica", "goroutines", func(s sample) float64 { return s.Goroutines }},
		{"queue", "Main queue length per replica", "tasks", func(s sample) float64 { return s.Queue }},
	} {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = sr.title, "minutes", sr.y
		byReplica := map[string]plotter.XYs{}
		var ymax float64
		for _, smp := range rep.Samples {
			if smp.MetricsErr && sr.file != "rss" {
				continue
			}
			v := sr.value(smp)
			byReplica[smp.Replica] = append(byReplica[smp.Replica], plotter.XY{X: smp.At.Minutes(), Y: v})
			ymax = max(ymax, v)
		}
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range byReplica {
				if !yield(id) {
					return
				}
			}
		})
		for i, id := range ids {
			l, err := plotter.NewLine(byReplica[id])
			if err != nil {
				return nil, err
			}
			l.Color = palette[i%len(palette)]
			p.Add(l)
			p.Legend.Add(id, l)
		}
		if err := rep.markFaults(p, ymax); err != nil {
			return nil, err
		}
		name := filepath.Base(stem) + "-" + sr.file + ".png"
		if err := p.Save(8*vg.Inch, 3.5*vg.Inch, filepath.Join(filepath.Dir(stem), name)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "Convergence time (after a fault, or churn paused between faults)", "minutes", "seconds"
	var pts plotter.XYs
	var ymax float64
	for _, c := range rep.Checkpoints {
		y := c.Converge.Seconds()
		if !c.OK {
			y = convergeBound.Seconds()
		}
		pts = append(pts, plotter.XY{X: c.At.Minutes(), Y: y})
		ymax = max(ymax, y)
	}
	if len(pts) > 0 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		p.Add(sc)
	}
	if err := rep.markFaults(p, ymax); err != nil {
		return nil, err
	}
	name := filepath.Base(stem) + "-convergence.png"
	if err := p.Save(8*vg.Inch, 3.5*vg.Inch, filepath.Join(filepath.Dir(stem), name)); err != nil {
		return nil, err
	}
	return append(names, name), nil
}

var palette = []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}}

// markFaults adds a labelled vertical line at each fault's start.
func (rep *report) markFaults(p *plot.Plot, ymax float64) error {
	top := max(ymax*1.05, 1)
	for _, f := range rep.Faults {
		x := f.At.Minutes()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return err
		}
		l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: top}}, Labels: []string{string(f.Kind)}})
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font.Size = vg.Points(7)
			labels.TextStyle[i].Rotation = -1.5708
		}
		p.Add(labels)
	}
	return nil
}

// verdict logs where the written summary is and returns an error naming
// the failed checks, if any: what a run, or a run judged again, ends with.
func (rep *report) verdict(summary string, err error) error {
	if err != nil {
		return err
	}
	logf("report: %s", summary)
	if !rep.growthJudged() {
		logf("growth: too short to judge (a run of %s; growth is judged from %s on), figures in the report", rep.Duration.Round(time.Second), minGrowthRun)
	}
	if !rep.Pass {
		return fmt.Errorf("the soak failed %d check(s); see %s", len(rep.Failures), summary)
	}
	return nil
}

// rejudge judges a run's saved report (<stem>.json) again with this
// build's bounds, and writes its summary, JSON and plots anew; the checks
// that need the run's cluster and logs (convergence, webhook answers,
// namespaces handled twice, panics, exits, problems) keep their records.
func rejudge(path string) error {
	rep, err := loadRejudged(path)
	if err != nil {
		return err
	}
	return rep.verdict(rep.writeStem(strings.TrimSuffix(path, ".json")))
}

// readReport reads a saved report as it was written.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

// loadRejudged reads a saved report and judges it with this build's bounds.
func loadRejudged(path string) (*report, error) {
	rep, err := readReport(path)
	if err != nil {
		return nil, err
	}
	rep.Growth = judgeSamples(rep.Samples, rep.Warmup)
	rep.Failures = nil
	rep.judge()
	return rep, nil
}
