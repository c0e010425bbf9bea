package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/hook-operator/hook-operator/internal/chart"
)

func TestThinCDF(t *testing.T) {
	sorted := make([]float64, 1000)
	for i := range sorted {
		sorted[i] = float64(i + 1) // 1 ... 1000 ms
	}
	got := thinCDF(sorted, 11)
	if len(got) != 11 {
		t.Fatalf("%d points, want 11", len(got))
	}
	if got[0] != (plotter.XY{X: 1, Y: 0.001}) || got[10] != (plotter.XY{X: 1000, Y: 1}) {
		t.Errorf("ends %v and %v, want the fastest event at 1/1000 and the slowest at 1", got[0], got[10])
	}
	for i := 1; i < len(got); i++ {
		if got[i].X < got[i-1].X || got[i].Y <= got[i-1].Y {
			t.Errorf("point %d %v does not follow %v", i, got[i], got[i-1])
		}
	}
	// Each point's fraction is its value's rank: 1..1000 puts value v at v/1000.
	for _, pt := range got {
		if pt.Y != pt.X/1000 {
			t.Errorf("point %v: fraction is not the value's rank", pt)
		}
	}
	if few := thinCDF([]float64{5, 7}, 200); len(few) != 2 || few[0] != (plotter.XY{X: 5, Y: 0.5}) || few[1] != (plotter.XY{X: 7, Y: 1}) {
		t.Errorf("fewer values than points: %v, want each value once", few)
	}
	if thinCDF(nil, 200) != nil {
		t.Error("no values should give no points")
	}
}

// chartReport is a report of a burst beside a reference: two repeats of
// ours and the reference with the bash hook, one of ours with the Go hook,
// and runs the chart must leave out.
func chartReport() *Report {
	run := func(scenario, operator, hook string, lat ...float64) Run {
		return Run{Scenario: scenario, Operator: operator, Hook: hook, Repeat: 1, LatenciesMS: lat, Metrics: map[string]float64{}}
	}
	failed := run("burst", ours, bashHook, 9000)
	failed.Error = "timed out"
	profiled := run("burst", ours, bashHook, 8000)
	profiled.Profiled = true
	return &Report{
		Config:  &Config{BurstObjects: 3, Repeat: 2},
		Machine: Machine{Cores: 2, LoadBefore: "3.10 2.00 1.00", LoadAfter: "4.20 3.00 2.00", Reference: "shell-operator v1.20.3"},
		Runs: []Run{
			run("trickle", ours, bashHook, 7000),
			run("burst", ours, bashHook, 30, 10, 20),
			run("burst", reference, bashHook, 100, 300, 200),
			failed, profiled,
			run("burst", ours, goHook, 5, 6),
			run("burst", ours, bashHook, 40, 50, 60),
			run("burst", reference, bashHook, 400, 500, 600),
		},
	}
}

func TestBurstCDFs(t *testing.T) {
	got := burstCDFs(chartReport(), 200)
	if len(got) != 3 {
		t.Fatalf("%d distributions, want ours and the reference's with bash, ours with Go: %+v", len(got), got)
	}
	for i, want := range []struct {
		operator, hook string
		events         int
		p50, p99, last float64
	}{
		{ours, bashHook, 6, 30, 60, 60},
		{reference, bashHook, 6, 300, 600, 600},
		{ours, goHook, 2, 5, 6, 6},
	} {
		c := got[i]
		if c.Operator != want.operator || c.Hook != want.hook || c.Events != want.events {
			t.Errorf("distribution %d: %s, %s hook, %d events; want %s, %s hook, %d (the burst's measured runs pooled)",
				i, c.Operator, c.Hook, c.Events, want.operator, want.hook, want.events)
		}
		if c.P50 != want.p50 || c.P99 != want.p99 {
			t.Errorf("%s %s: p50 %v, p99 %v; want %v and %v of the pooled runs", c.Operator, c.Hook, c.P50, c.P99, want.p50, want.p99)
		}
		if last := c.Points[len(c.Points)-1]; last.X != want.last || last.Y != 1 {
			t.Errorf("%s %s: ends at %v, want the slowest event, %v ms, at 1", c.Operator, c.Hook, last, want.last)
		}
	}
}

func TestBurstChart(t *testing.T) {
	p, err := burstChart(chartReport())
	if err != nil {
		t.Fatal(err)
	}
	svg, err := chart.SVG(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"hook-operator, bash hook (p50 30 ms, p99 60 ms)",
		"shell-operator v1.20.3, bash hook (p50 300 ms, p99 600 ms)",
		"hook-operator, go hook (p50 5 ms, p99 6 ms)",
		"load average 3.10 before, 4.20 after",
	} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}

	r := chartReport()
	r.Runs = r.Runs[:1]
	if _, err := burstChart(r); err == nil || !strings.Contains(err.Error(), "--scenarios burst") {
		t.Errorf("a report without a burst: %v, want an error saying to run the burst", err)
	}
}

func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	data, err := json.Marshal(chartReport())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := burstCDFs(r, 200); len(got) != 3 || got[1].P99 != 600 {
		t.Errorf("read back: %+v, want the same distributions as written", got)
	}
	if err := os.WriteFile(path, []byte(`{"runs": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readReport(path); err == nil || !strings.Contains(err.Error(), "not a results file") {
		t.Errorf("a JSON file without a config: %v, want an error naming it", err)
	}
	if _, err := readReport(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "make bench") {
		t.Errorf("a missing file: %v, want an error saying what writes one", err)
	}
}

func TestRaisedTo(t *testing.T) {
	in := plotter.XYs{{X: -2, Y: 0.1}, {X: 0, Y: 0.2}, {X: 0.5, Y: 0.3}}
	got := raisedTo(in, 0.1)
	want := plotter.XYs{{X: 0.1, Y: 0.1}, {X: 0.1, Y: 0.2}, {X: 0.5, Y: 0.3}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v (a log axis cannot show 0 or less)", i, got[i], want[i])
		}
	}
	if in[0].X != -2 {
		t.Error("raisedTo changed its argument")
	}
}
