package main

import (
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/hook-operator/hook-operator/internal/chart"
)

// memorySamples are two replicas sampled every 5 s for 10 minutes, the
// second replica's metrics unread in its first sample.
func memorySamples() []sample {
	var out []sample
	for i := range 121 {
		at := time.Duration(i) * 5 * time.Second
		for _, id := range []string{"r2", "r1"} {
			smp := sample{At: at, Replica: id, Proc: procSample{RSS: int64(20+i) << 20}, HeapLive: float64(i) * (1 << 19)}
			smp.MetricsErr = id == "r2" && i == 0
			out = append(out, smp)
		}
	}
	return out
}

func TestReplicaMemory(t *testing.T) {
	got := replicaMemory(memorySamples(), 1000)
	if len(got) != 2 || got[0].Replica != "r1" || got[1].Replica != "r2" {
		t.Fatalf("series %+v, want r1 then r2", got)
	}
	r1, r2 := got[0], got[1]
	if len(r1.RSS) != 121 || len(r1.Heap) != 121 {
		t.Errorf("r1: %d RSS and %d heap points, want every sample", len(r1.RSS), len(r1.Heap))
	}
	if len(r2.RSS) != 121 || len(r2.Heap) != 120 {
		t.Errorf("r2: %d RSS and %d heap points, want 121 and 120 (its unread metrics left out of the heap)", len(r2.RSS), len(r2.Heap))
	}
	// Sample 60 is at 5 minutes: RSS 80 MiB, heap 30 MiB.
	if r1.RSS[60] != (plotter.XY{X: 5, Y: 80}) || r1.Heap[60] != (plotter.XY{X: 5, Y: 30}) {
		t.Errorf("at 5 minutes: RSS %v, heap %v; want (5, 80) and (5, 30) in minutes and MiB", r1.RSS[60], r1.Heap[60])
	}

	thinned := replicaMemory(memorySamples(), 11)
	rss := thinned[0].RSS
	if len(rss) != 11 || rss[0].X != 0 || rss[10].X != 10 {
		t.Fatalf("thinned to 11: %v, want 11 points from 0 to 10 minutes", rss)
	}
	for i := 1; i < len(rss); i++ {
		if rss[i].X-rss[i-1].X != 1 {
			t.Errorf("thinned points %v and %v are not a minute apart: not evenly spaced", rss[i-1], rss[i])
		}
	}
}

func TestMemoryChart(t *testing.T) {
	rep := &report{Duration: 10 * time.Minute, Samples: memorySamples(),
		Faults: []faultRecord{{Kind: faultKill, At: 4 * time.Minute}}}
	p, err := rep.memoryChart("2026-12-07T15-00-00Z")
	if err != nil {
		t.Fatal(err)
	}
	svg, err := chart.SVG(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"r1 RSS", "r1 Go heap live", "r2 RSS", "r2 Go heap live", "kill-replica", "over 10m0s"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if _, err := (&report{}).memoryChart("empty"); err == nil {
		t.Error("a run without samples drew a chart; want an error")
	}
}
