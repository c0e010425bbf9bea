package main

import (
	"fmt"
	"time"
)

// maxGrowthPerHour is the bound on a resource's growth after warm-up: the
// least-squares slope of the samples, per hour, as a fraction of their mean.
const maxGrowthPerHour = 0.05

// A segment is one process's samples of one series: times and values.
type segment struct {
	t []time.Duration
	v []float64
}

// growth fits value = a + b·t by least squares over the samples (t in
// hours) and returns b divided by the samples' mean: the fraction of the
// mean gained per hour. Fewer than 3 samples, or a mean of 0 (nothing to
// grow from, e.g. no child processes at all), give 0 and ok false.
func growth(t []time.Duration, v []float64) (perHour float64, ok bool) {
	return pooledGrowth([]segment{{t, v}})
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
	Pass    bool
	Reason  string
}

// judgeGrowth applies maxGrowthPerHour to a series sampled after warm-up.
// A series that is all zero passes (nothing there to leak); one that
// cannot be fitted otherwise fails, saying why.
func judgeGrowth(series string, t []time.Duration, v []float64) verdict {
	return judgePooled(series, []segment{{t, v}})
}

// judgePooled applies maxGrowthPerHour to the slope the segments share
// (pooledGrowth).
func judgePooled(series string, segs []segment) verdict {
	g, ok := pooledGrowth(segs)
	d := verdict{Series: series, PerHour: g, Fitted: ok}
	var t []time.Duration
	var v []float64
	for _, sg := range segs {
		t, v = append(t, sg.t...), append(v, sg.v...)
	}
	switch {
	case ok:
		d.Pass = g <= maxGrowthPerHour
		if !d.Pass {
			d.Reason = fmt.Sprintf("grows %.1f%% of its mean per hour, above the bound of %.0f%%", 100*g, 100*maxGrowthPerHour)
		}
	case len(t) >= 3 && allZero(v):
		d.Pass = true
	default:
		d.Reason = fmt.Sprintf("%d samples after warm-up: too few to fit", len(t))
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
