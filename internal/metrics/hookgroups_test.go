package metrics_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

// groupedLines returns n lines of one gauge, each in a group of its own,
// as the hostile hook of issue 60 wrote 100,000 of them; with fresh, each
// line is a series of its own too, so that all but the first 1,000 are
// over the per-hook cap.
func groupedLines(n int, fresh bool) []byte {
	var b strings.Builder
	for i := range n {
		if fresh {
			fmt.Fprintf(&b, `{"name":"g","set":1,"group":"g%d","labels":{"i":"%d"}}`+"\n", i, i)
		} else {
			fmt.Fprintf(&b, `{"name":"g","set":1,"group":"g%d"}`+"\n", i)
		}
	}
	return []byte(b.String())
}

// afterRun is what the executor does with a run's $METRICS_PATH, under the
// default caps: parse, check, apply.
func afterRun(tb testing.TB, data []byte) {
	h := metrics.New(metrics.DefaultPrefix).Hooks
	h.SetLimits(metrics.HookLimits{PerHook: metrics.DefaultMaxSeriesPerHook, Total: metrics.DefaultMaxSeries})
	ops, err := metrics.ParseHookOps(data)
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Check("flood.sh", ops); err != nil {
		tb.Fatal(err)
	}
	h.Apply("flood.sh", ops)
}

// BenchmarkHookMetricsGroupFlood is the post-run step of one run that
// wrote n grouped lines. Its time per line stays about the same from
// 10,000 lines to 100,000, lines over the series cap included; it grew
// with the square of the lines before (146 µs a line at 100,000, against
// 20 µs at 10,000).
func BenchmarkHookMetricsGroupFlood(b *testing.B) {
	for _, fresh := range []bool{false, true} {
		for _, n := range []int{10_000, 100_000} {
			data := groupedLines(n, fresh)
			b.Run(fmt.Sprintf("fresh=%t/lines=%d", fresh, n), func(b *testing.B) {
				for b.Loop() {
					afterRun(b, data)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/line")
			})
		}
	}
}

// Ten times the grouped lines take about ten times the CPU, not a
// hundred (the old code took 50 times as much). The bound, 25 times,
// leaves room for noise; each size counts the process's CPU time (other
// processes on a loaded machine do not count), at its best of three.
func TestHookMetricsGroupFloodIsLinear(t *testing.T) {
	best := func(data []byte) time.Duration {
		var d time.Duration
		for i := range 3 {
			start := cpuTime(t)
			afterRun(t, data)
			if took := cpuTime(t) - start; i == 0 || took < d {
				d = took
			}
		}
		return d
	}
	for _, fresh := range []bool{false, true} {
		small, large := best(groupedLines(4_000, fresh)), best(groupedLines(40_000, fresh))
		t.Logf("fresh series %t: 4,000 lines %s, 40,000 lines %s", fresh, small, large)
		if large > 25*small {
			t.Errorf("fresh series %t: 40,000 grouped lines took %s, %.0f times the %s of 4,000; want about 10 times", fresh, large, float64(large)/float64(small), small)
		}
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A series belongs to the group of the last line that wrote it: a later
// line moves it (or, without a group, takes it out), dropping the group
// it left does not drop it, an expire in the middle of a run drops what
// the run set before it, and dropped series give their room back.
func TestHookMetricsGroupMembership(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	m.Hooks.SetLimits(metrics.HookLimits{PerHook: 3})
	apply(t, m.Hooks, "a.sh", `{"name":"objs","set":1,"group":"old","labels":{"o":"moved"}}
{"name":"objs","set":1,"group":"old","labels":{"o":"stays"}}
{"name":"objs","set":2,"group":"new","labels":{"o":"moved"}}
{"name":"loose","set":1,"group":"old"}
{"name":"loose","set":3}`)
	apply(t, m.Hooks, "b.sh", `{"action":"expire","group":"old"}`)
	want := "objs{hook=\"a.sh\",o=\"moved\"} 2\n"
	page := serve(t, m.HooksHandler())
	if !strings.Contains(page, want) || !strings.Contains(page, "loose{hook=\"a.sh\"} 3\n") || strings.Contains(page, `o="stays"`) {
		t.Errorf("after expiring the group the series left:\n%s", page)
	}
	// A run that names group "new" replaces it; an expire later in the
	// run drops what the run set in it.
	apply(t, m.Hooks, "a.sh", `{"name":"objs","set":5,"group":"new","labels":{"o":"next"}}
{"action":"expire","group":"new"}
{"name":"objs","set":6,"group":"kept","labels":{"o":"last"}}`)
	page = serve(t, m.HooksHandler())
	if strings.Contains(page, `o="moved"`) || strings.Contains(page, `o="next"`) || !strings.Contains(page, "objs{hook=\"a.sh\",o=\"last\"} 6\n") {
		t.Errorf("after the run that expired its own group:\n%s", page)
	}
	// a.sh holds loose and objs{o=last}: room for one more of its cap of 3.
	apply(t, m.Hooks, "a.sh", freshSeries("more", 0, 5))
	if n := countSeries("\n"+serve(t, m.HooksHandler()), "more"); n != 1 {
		t.Errorf("a.sh got %d more series, want 1: dropped series did not give their room back, or took it twice", n)
	}
	// A line Check would refuse, applied without it, is left out.
	m.Hooks.Apply("a.sh", parse(t, `{"name":"objs","set":9,"labels":{"other":"x"}}`))
	if page := serve(t, m.HooksHandler()); strings.Contains(page, `other="x"`) {
		t.Errorf("an unchecked line with other label names was applied:\n%s", page)
	}
}
