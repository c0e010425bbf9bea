package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hook-operator/hook-operator/internal/chart"
)

// chartPoints bounds the points of one line of the memory chart, so that
// the SVG stays small (a 2-hour soak samples each replica 1,440 times).
const chartPoints = 240

// runChart is `soak chart`: it reads a saved run and draws each replica's
// RSS and live Go heap over the run, faults marked, as an SVG.
func runChart(args []string) error {
	cmd := chart.Command{
		Name:  "soak chart",
		Usage: "usage: soak chart [--out FILE.svg] RESULTS.json\n\nDraws a saved run's memory over time (soak/results/<time>.json).",
		Out:   "docs/img/soak-memory.svg",
		Need:  "name one saved run, soak/results/<time>.json (make soak writes one)",
		Logf:  logf,
	}
	return cmd.Run(args, func(in string) (*plot.Plot, error) {
		rep, err := readReport(in)
		if err != nil {
			return nil, err
		}
		p, err := rep.memoryChart(filepath.Base(strings.TrimSuffix(in, ".json")))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, err)
		}
		return p, nil
	})
}

// A memorySeries is one replica's memory over the run, in MiB against
// minutes: RSS from /proc, and the live Go heap from its /metrics (left
// out where a sample could not read them).
type memorySeries struct {
	Replica   string
	RSS, Heap plotter.XYs
}

// replicaMemory groups the samples by replica, in replica order, each
// series thinned to at most points points.
func replicaMemory(samples []sample, points int) []memorySeries {
	byReplica := map[string]*memorySeries{}
	for _, smp := range samples {
		s, ok := byReplica[smp.Replica]
		if !ok {
			s = &memorySeries{Replica: smp.Replica}
			byReplica[smp.Replica] = s
		}
		at := smp.At.Minutes()
		s.RSS = append(s.RSS, plotter.XY{X: at, Y: float64(smp.Proc.RSS) / (1 << 20)})
		if !smp.MetricsErr {
			s.Heap = append(s.Heap, plotter.XY{X: at, Y: smp.HeapLive / (1 << 20)})
		}
	}
	out := make([]memorySeries, 0, len(byReplica))
	for _, id := range slices.Sorted(maps.Keys(byReplica)) {
		s := byReplica[id]
		out = append(out, memorySeries{Replica: id, RSS: chart.Thin(s.RSS, points), Heap: chart.Thin(s.Heap, points)})
	}
	return out
}

// memoryChart draws each replica's RSS (solid) and live Go heap (dashed),
// one colour per replica, with each fault a vertical line.
func (rep *report) memoryChart(run string) (*plot.Plot, error) {
	series := replicaMemory(rep.Samples, chartPoints)
	if len(series) == 0 {
		return nil, errors.New("no samples")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Soak %s: memory per replica over %s (faults marked)", run, rep.Duration.Round(time.Second))
	p.X.Label.Text, p.Y.Label.Text = "minutes", "MiB"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	var ymax float64
	for i, s := range series {
		for _, part := range []struct {
			what   string
			xys    plotter.XYs
			dashed bool
		}{{"RSS", s.RSS, false}, {"Go heap live", s.Heap, true}} {
			if len(part.xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(part.xys)
			if err != nil {
				return nil, err
			}
			l.Color = palette[i%len(palette)]
			if part.dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(l)
			p.Legend.Add(s.Replica+" "+part.what, l)
			for _, pt := range part.xys {
				ymax = max(ymax, pt.Y)
			}
		}
	}
	// Room above the lines for the legend, six rows.
	p.Y.Min, p.Y.Max = 0, 1.6*ymax
	if err := rep.markFaults(p, ymax); err != nil {
		return nil, err
	}
	return p, nil
}
