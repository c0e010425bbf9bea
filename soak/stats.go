package main

import (
	"fmt"
	"time"
)

// maxGrowthPerHour is the bound on a resource's growth after warm-up: the
// least-squares slope of the samples, per hour, as a fraction of their mean.
const maxGrowthPerHour = 0.05

// growth fits value = a + b·t by least squares over the samples (t in
// hours) and returns b divided by the samples' mean: the fraction of the
// mean gained per hour. Fewer than 3 samples, or a mean of 0 (nothing to
// grow from, e.g. no child processes at all), give 0 and ok false.
func growth(t []time.Duration, v []float64) (perHour float64, ok bool) {
	n := len(t)
	if n < 3 || len(v) != n {
		return 0, false
	}
	var st, sv float64
	for i := range n {
		st += t[i].Hours()
		sv += v[i]
	}
	mt, mv := st/float64(n), sv/float64(n)
	var cov, vart float64
	for i := range n {
		dt := t[i].Hours() - mt
		cov += dt * (v[i] - mv)
		vart += dt * dt
	}
	if vart == 0 || mv == 0 {
		return 0, false
	}
	return cov / vart / mv, true
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
	g, ok := growth(t, v)
	d := verdict{Series: series, PerHour: g, Fitted: ok}
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
