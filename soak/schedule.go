package main

import (
	"fmt"
	"time"
)

// A faultKind is one of the faults the soak injects.
type faultKind string

const (
	faultKill         faultKind = "kill-replica"  // SIGKILL of a random replica, then its restart
	faultTermLeader   faultKind = "term-leader"   // SIGTERM of the leader, then its restart
	faultControlPlane faultKind = "control-plane" // every control-plane process stopped, then started
	faultHooksChange  faultKind = "hooks-change"  // the hooks folder: a valid hook added, made invalid, fixed
	faultHang         faultKind = "hook-hang"     // one run of the mirror hook hangs until its timeout
	fault429          faultKind = "api-429"       // every API request through the proxy answered 429
)

// faultOrder is the order the schedule cycles through.
var faultOrder = []faultKind{faultKill, faultHooksChange, faultTermLeader, faultHang, fault429, faultControlPlane}

// A scheduled fault is a fault and when, from the soak's start, it begins.
type scheduled struct {
	At   time.Duration
	Kind faultKind
}

// schedule spreads faults over [warmup, duration-tail): one every interval
// (but at least one of each kind when the span allows it), cycling through
// faultOrder. A fault needs room to converge, so the last one starts at
// least tail before the end.
func schedule(duration, warmup, tail, interval time.Duration) ([]scheduled, error) {
	span := duration - warmup - tail
	if span <= 0 {
		return nil, fmt.Errorf("soak: a duration of %s leaves no time for faults (warm-up %s, and %s at the end to converge); give SOAK_DURATION at least %s",
			duration, warmup, tail, warmup+tail+time.Minute)
	}
	n := int(span / interval)
	if n < len(faultOrder) {
		n = len(faultOrder)
		interval = span / time.Duration(n)
	}
	out := make([]scheduled, n)
	for i := range n {
		out[i] = scheduled{At: warmup + time.Duration(i)*interval, Kind: faultOrder[i%len(faultOrder)]}
	}
	return out, nil
}
