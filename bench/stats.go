package main

import (
	"iter"
	"math"
	"slices"
	"time"
)

// median returns the middle value of xs (the mean of the two middle values
// when there is an even number), or NaN when xs is empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest value that at least p% of the values
// do not exceed. It is NaN when xs is empty.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// latencies returns, for each name the hook saw, the time in ms from its
// create call's return (returned[i] for names[i]) to the start of the hook
// run that had its event. A value can be slightly negative: the watch event
// may reach the hook before the create call's response reaches the harness.
func latencies(names []string, returned []time.Time, seen map[string]time.Time) []float64 {
	out := make([]float64, 0, len(names))
	for i, n := range names {
		if at, ok := seen[n]; ok && !returned[i].IsZero() {
			out = append(out, float64(at.Sub(returned[i]).Microseconds())/1000)
		}
	}
	return out
}

// setLatencyMetrics adds the percentiles of r's latencies to its metrics.
func setLatencyMetrics(r *Run) {
	if len(r.LatenciesMS) == 0 {
		return
	}
	r.Metrics[mP50] = percentile(r.LatenciesMS, 50)
	r.Metrics[mP90] = percentile(r.LatenciesMS, 90)
	r.Metrics[mP99] = percentile(r.LatenciesMS, 99)
	r.Metrics[mMax] = percentile(r.LatenciesMS, 100)
}

// setLatencies sets r's latencies, from each create's return (returned) to
// the start of the hook run that had its event (seen), with their
// percentiles, and splits them at floor, which it stops.
func setLatencies(r *Run, names []string, returned []time.Time, seen map[string]time.Time, floor *floorWatch) error {
	r.LatenciesMS = latencies(names, returned, seen)
	setLatencyMetrics(r)
	arrived, err := floor.Stop()
	if err != nil {
		return err
	}
	setFloorMetrics(r, names, returned, arrived, seen)
	return nil
}

// setFloorMetrics adds the floor of r's latencies, from the create's return
// to a bare watch's event (floor), and the rest, from that event to the
// start of the hook run that had it (seen), to r's metrics.
func setFloorMetrics(r *Run, names []string, returned []time.Time, floor, seen map[string]time.Time) {
	arrived := make([]time.Time, len(names))
	for i, n := range names {
		arrived[i] = floor[n]
	}
	if l := latencies(names, returned, floor); len(l) > 0 {
		r.Metrics[mWatchP50] = percentile(l, 50)
		r.Metrics[mWatchP99] = percentile(l, 99)
	}
	if l := latencies(names, arrived, seen); len(l) > 0 {
		r.Metrics[mAfterP50] = percentile(l, 50)
		r.Metrics[mAfterP99] = percentile(l, 99)
	}
}

// latest returns the latest of times, or the zero time.
func latest(times iter.Seq[time.Time]) time.Time {
	var last time.Time
	for t := range times {
		if t.After(last) {
			last = t
		}
	}
	return last
}
