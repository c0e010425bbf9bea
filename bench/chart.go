package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hook-operator/hook-operator/internal/chart"
)

// chartPoints bounds the points of one line of a chart, so that the SVG
// stays small (a burst of 3,000 objects, 3 repeats, is 9,000 latencies).
const chartPoints = 200

// runChart is `bench chart`: it reads a results file and draws the burst's
// latency distribution, ours against the reference's, as an SVG.
func runChart(args []string) error {
	cmd := chart.Command{
		Name:  "bench chart",
		Usage: "usage: bench chart [--out FILE.svg] [RESULTS.json]\n\nDraws the burst scenario's latency distribution (default results: bench/results/latest.json).",
		Out:   "docs/img/bench-burst-latency.svg",
		In:    "bench/results/latest.json",
		Logf:  logf,
	}
	return cmd.Run(args, func(in string) (*plot.Plot, error) {
		r, err := readReport(in)
		if err != nil {
			return nil, err
		}
		p, err := burstChart(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, err)
		}
		return p, nil
	})
}

// readReport reads a results file the harness wrote.
func readReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (make bench writes bench/results/latest.json; name another results file)", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Config == nil {
		return nil, fmt.Errorf("%s: no config: not a results file of the bench", path)
	}
	return &r, nil
}

// A cdf is the distribution of one operator's latencies with one hook:
// each point is a latency and the fraction of events that waited no
// longer.
type cdf struct {
	Operator, Hook string
	Events         int
	// P50 and P99 are of the pooled latencies (nearest rank), not the
	// medians of each run's that the report shows.
	P50, P99 float64
	Points   plotter.XYs
}

// burstCDFs pools, per operator and hook, the latencies of every burst run
// that counts in the medians (not failed, not profiled), in the order the
// runs came, and returns their distributions, each thinned to at most
// points points (the first and the last event always among them).
func burstCDFs(r *Report, points int) []cdf {
	type key struct{ operator, hook string }
	var order []key
	pooled := map[key][]float64{}
	for _, run := range r.Runs {
		if run.Scenario != "burst" || run.Error != "" || run.Profiled || len(run.LatenciesMS) == 0 {
			continue
		}
		k := key{run.Operator, run.Hook}
		if _, ok := pooled[k]; !ok {
			order = append(order, k)
		}
		pooled[k] = append(pooled[k], run.LatenciesMS...)
	}
	out := make([]cdf, 0, len(order))
	for _, k := range order {
		l := slices.Clone(pooled[k])
		slices.Sort(l)
		out = append(out, cdf{Operator: k.operator, Hook: k.hook, Events: len(l),
			P50: percentile(l, 50), P99: percentile(l, 99), Points: thinCDF(l, points)})
	}
	return out
}

// thinCDF turns sorted latencies into their distribution, each value
// with the fraction of values up to its rank, thinned to at most points
// points evenly spaced by rank (chart.Thin).
func thinCDF(sorted []float64, points int) plotter.XYs {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	all := make(plotter.XYs, n)
	for rank, v := range sorted {
		all[rank] = plotter.XY{X: v, Y: float64(rank+1) / float64(n)}
	}
	return chart.Thin(all, points)
}

// burstChart draws the burst's latency distributions: one line per
// operator and hook, the reference's dashed, each hook its colour.
func burstChart(r *Report) (*plot.Plot, error) {
	cdfs := burstCDFs(r, chartPoints)
	if len(cdfs) == 0 {
		return nil, errors.New("no burst run with latencies: run the burst scenario (--scenarios burst)")
	}
	p := plot.New()
	p.Title.Text = burstTitle(r)
	p.X.Label.Text = "latency, create to hook start (ms, log scale)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.X.Min = minChartMS
	p.Y.Label.Text = "fraction of events"
	p.Y.Min, p.Y.Max = 0, 1
	// Top left, where every line is still near 0 on a log axis.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(-8)
	p.Add(plotter.NewGrid())
	var hooks []string
	for _, c := range cdfs {
		if !slices.Contains(hooks, c.Hook) {
			hooks = append(hooks, c.Hook)
		}
	}
	for _, c := range cdfs {
		l, err := plotter.NewLine(raisedTo(c.Points, minChartMS))
		if err != nil {
			return nil, err
		}
		l.Color = hookColors[slices.Index(hooks, c.Hook)%len(hookColors)]
		l.Width = vg.Points(1.5)
		if c.Operator != ours {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s, %s hook (p50 %.0f ms, p99 %.0f ms)", operatorLabel(r, c.Operator), c.Hook, c.P50, c.P99), l)
	}
	return p, nil
}

// minChartMS is the least latency the log-scale axis shows; latencies
// below it are drawn at it. A latency can be zero or slightly negative
// (the event reached the hook before the create's response reached the
// harness), and none of a burst's is much below a millisecond.
const minChartMS = 1.0

// raisedTo returns xys with every X below least raised to it.
func raisedTo(xys plotter.XYs, least float64) plotter.XYs {
	out := make(plotter.XYs, len(xys))
	for i, pt := range xys {
		out[i] = plotter.XY{X: max(pt.X, least), Y: pt.Y}
	}
	return out
}

// operatorLabel names an operator with its version where the report has
// it: "shell-operator v1.20.3".
func operatorLabel(r *Report, operator string) string {
	if operator == reference && r.Machine.Reference != "" {
		return r.Machine.Reference
	}
	return operator
}

// burstTitle says what the chart shows and where it was measured.
func burstTitle(r *Report) string {
	m := r.Machine
	oneMinute := func(load string) string { return strings.Fields(load + " ?")[0] }
	return fmt.Sprintf("Burst of %s ConfigMaps: latency distribution, %d run(s) pooled\n%s, %d cores; load average %s before, %s after",
		count(r.Config.BurstObjects), r.Config.Repeat, r.Started.UTC().Format("2006-01-02"), m.Cores, oneMinute(m.LoadBefore), oneMinute(m.LoadAfter))
}

var hookColors = []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}}
