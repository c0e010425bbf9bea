package main

import (
	"fmt"
	"time"
)

// maxGrowthPerHour is the bound on a resource's growth after warm-up: the
// least-squares slope of the samples, per hour, as a fraction of their mean.
const maxGrowthPerHour = 0.05

// wander is how far a flat series moves about its level, as a fraction of
// its mean: the range of the 5-minute means of the witness over the 105
// minutes it was fitted in the 2-hour soak of 2026-11-27T06-47-19Z, which
// grew by +0.7 % an hour (RSS 3.0 %, the live heap 3.2 %, open fds 3.0 %,
// goroutines 2.0 %). It is the heap that the runtime keeps between
// collections, and the work that comes and goes with faults.
const wander = 0.032

// growthBound is the bound that a fit over a window of the given length can
// be held to: maxGrowthPerHour, or, for a window too short to tell that from
// the wander, what the wander alone can read as. A step of the whole wander
// in a window's middle reads as 1.5 times the wander over the window's
// length; over the witness's windows of 20, 30, 45 and 60 minutes a flat
// process read at most 10, 5.6, 2.9 and 1.7 % an hour. The bound is 5 % for
// windows of 58 minutes or more, 9.6 % for 30 minutes, 14 % for 20.
func growthBound(window time.Duration) float64 {
	if window <= 0 {
		return maxGrowthPerHour
	}
	return max(maxGrowthPerHour, 1.5*wander/window.Hours())
}

// fullBoundWindow is the shortest window held to maxGrowthPerHour itself.
func fullBoundWindow() time.Duration {
	return time.Duration(1.5 * wander / maxGrowthPerHour * float64(time.Hour))
}

// A segment is one process's samples of one series: times and values.
type segment struct {
	t []time.Duration
	v []float64
}

// pooledGrowth fits value = a_p + b·t over several segments at once: each
// segment p (a process; a restarted replica starts lower) has an intercept
// of its own, and all share the slope b. It returns b divided by the mean
// of all the values. Segments of fewer than 2 samples add nothing; fewer
// than 3 samples in all, or a mean of 0, give 0 and ok false.
func pooledGrowth(segs []segment) (perHour float64, ok bool) {
	var cov, vart, sum float64
	n := 0
	for _, sg := range segs {
		m := len(sg.t)
		if m < 2 || len(sg.v) != m {
			continue
		}
		var st, sv float64
		for i := range m {
			st += sg.t[i].Hours()
			sv += sg.v[i]
		}
		mt, mv := st/float64(m), sv/float64(m)
		for i := range m {
			dt := sg.t[i].Hours() - mt
			cov += dt * (sg.v[i] - mv)
			vart += dt * dt
		}
		sum, n = sum+sv, n+m
	}
	if n < 3 || vart == 0 || sum == 0 {
		return 0, false
	}
	return cov / vart / (sum / float64(n)), true
}

// A verdict says whether one series passed the growth bound.
type verdict struct {
	Series  string
	PerHour float64
	Fitted  bool
	// Bound is the growth the series was held to (growthBound).
	Bound  float64
	Pass   bool
	Reason string
}

// judgePooled applies bound to the slope the segments share
// (pooledGrowth). A series that is all zero passes (nothing there to
// leak); one that cannot be fitted otherwise fails, saying why.
func judgePooled(series string, segs []segment, bound float64) verdict {
	g, ok := pooledGrowth(segs)
	d := verdict{Series: series, PerHour: g, Fitted: ok, Bound: bound}
	n, zero := 0, true
	for _, sg := range segs {
		n, zero = n+len(sg.t), zero && allZero(sg.v)
	}
	switch {
	case ok:
		d.Pass = g <= bound
		if !d.Pass {
			d.Reason = fmt.Sprintf("grows %.1f%% of its mean per hour, above the bound of %.1f%%", 100*g, 100*bound)
		}
	case n >= 3 && zero:
		d.Pass = true
	default:
		d.Reason = fmt.Sprintf("%d samples after warm-up: too few to fit", n)
	}
	return d
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
