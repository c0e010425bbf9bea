package metrics

import (
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// What the operator serves is the text format exactly: escaping, bucket
// and quantile lines, sorting. Prometheus' own parser (a test dependency
// only) reads it back with the same values.
func TestWriteTextExactAndParsedByPrometheus(t *testing.T) {
	r := &registry{}
	f := factory{r, "p_"}
	runs := f.counter("runs_total", "Runs \\ with\nnewline.", "queue", "hook")
	runs.add(1, "main", "b.sh")
	runs.add(2, "main", `a "quoted"\path`+"\n")
	runs.add(0.5, "main", "b.sh")
	g := f.gauge("temp", "A gauge.")
	g.set(math.Inf(-1))
	h := f.histogram("wait_seconds", "A histogram.", []float64{0.1, 1}, "queue")
	h.observe(0.1, "main")
	h.observe(0.5, "main")
	h.observe(7, "main")
	f.gauge("unused", "No series: not served.", "x")
	r.Register(goCollector{})
	var b strings.Builder
	if err := WriteText(&b, r.Gather()); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	want := `# HELP p_runs_total Runs \\ with\nnewline.
# TYPE p_runs_total counter
p_runs_total{hook="a \"quoted\"\\path\n",queue="main"} 2
p_runs_total{hook="b.sh",queue="main"} 1.5
# HELP p_temp A gauge.
# TYPE p_temp gauge
p_temp -Inf
# HELP p_wait_seconds A histogram.
# TYPE p_wait_seconds histogram
p_wait_seconds_bucket{queue="main",le="0.1"} 1
p_wait_seconds_bucket{queue="main",le="1"} 2
p_wait_seconds_bucket{queue="main",le="+Inf"} 3
p_wait_seconds_sum{queue="main"} 7.6
p_wait_seconds_count{queue="main"} 3
`
	if i := strings.Index(got, "# HELP p_"); i < 0 || got[i:] != want {
		t.Errorf("served\n%s\nwant, after the go_ families,\n%s", got, want)
	}
	if strings.Contains(got, "unused") {
		t.Error("a family without series is served")
	}

	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(got))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\n%s", err, got)
	}
	if n := len(fams["p_runs_total"].GetMetric()); n != 2 {
		t.Errorf("p_runs_total: %d series, want 2", n)
	}
	if hist := fams["p_wait_seconds"].GetMetric()[0].GetHistogram(); hist.GetSampleCount() != 3 || hist.GetBucket()[1].GetCumulativeCount() != 2 {
		t.Errorf("p_wait_seconds parsed as %v", hist)
	}
	if q := fams["go_gc_duration_seconds"].GetMetric()[0].GetSummary().GetQuantile(); len(q) != 5 {
		t.Errorf("go_gc_duration_seconds: %d quantiles, want 5", len(q))
	}
	for _, name := range goNames {
		if fams[name] == nil {
			t.Errorf("%s is not served", name)
		}
	}
}

func TestProcessCollector(t *testing.T) {
	// /proc counts CPU time in clock ticks (10 ms): a test binary started a
	// moment ago may have used less than one. Use some first, so that the
	// counter has a value to show, and read it between two rusage readings
	// to check that it is the process's CPU time, not merely positive.
	before := burnCPU(t, 50*time.Millisecond)
	fams := map[string]float64{}
	for _, f := range (processCollector{}).Collect() {
		fams[f.Name] = f.Series[0].Value
	}
	after := cpuTime(t)
	for _, name := range processNames {
		if fams[name] <= 0 {
			t.Errorf("%s = %v, want a positive value (%v)", name, fams[name], fams)
		}
	}
	// One tick of rounding either side of what getrusage reported.
	if cpu := fams["process_cpu_seconds_total"]; cpu < before.Seconds()-2.0/userHZ || cpu > after.Seconds()+2.0/userHZ {
		t.Errorf("process_cpu_seconds_total = %v, want between %v and %v (getrusage)", cpu, before.Seconds(), after.Seconds())
	}
	if rss := fams["process_resident_memory_bytes"]; rss < 1<<20 || rss > 1<<32 {
		t.Errorf("process_resident_memory_bytes = %v", rss)
	}
}

// burnCPU spins until the process has used at least min of CPU time, by
// getrusage, and returns what it had used then.
func burnCPU(t *testing.T, min time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	x := 1.0
	for {
		used := cpuTime(t)
		if used >= min {
			if x == 0 { // keeps the loop from being optimised away
				t.Log(x)
			}
			return used
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process used only %v of CPU in a minute of spinning", used)
		}
		for i := 0; i < 1e6; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestVecLabelCountChecked(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a wrong number of label values was accepted")
		}
	}()
	newVec("x", "x", Counter, nil, "a", "b").add(1, "only one")
}
