package main

import (
	"context"
	"fmt"
	"time"
)

// runScale grows one namespace through ScaleSizes ConfigMaps and measures
// at each size what sync measures, for keepFullObjectsInMemory false and
// true, with our operator and the first hook only: it is the runtime's
// cost per object that is of interest, and the hook only marks the
// Synchronization. Before each run it measures the floor, a bare streaming
// list of the same objects, and reports the Synchronization time as a
// multiple of it.
func runScale(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "scale")
	if err != nil {
		return err
	}
	s := subject{b.impls[0], b.cfg.Hooks[0]}
	have := 0
	for _, n := range b.cfg.ScaleSizes {
		start := time.Now()
		if err := b.cluster.Fill(ctx, ns, "cm-", have, n); err != nil {
			return err
		}
		logf("  %d ConfigMaps in %s (%d created in %s)", n, ns, n-have, time.Since(start).Round(time.Second))
		have = n
		for _, keepFull := range []bool{false, true} {
			for rep := b.firstRepeat(); rep <= b.cfg.Repeat; rep++ {
				variant := fmt.Sprintf("keepFull=%t", keepFull)
				r := newRun("scale", variant, s, rep, n)
				floor, listed, err := b.cluster.StreamingList(ctx, ns)
				if err != nil {
					return err
				}
				if listed != n+1 { // and kube-root-ca.crt
					return fmt.Errorf("the streaming list of %s had %d objects, want %d and kube-root-ca.crt", ns, listed, n)
				}
				prof := b.profile("scale", fmt.Sprintf("%s-%d", variant, n), s, rep)
				op, err := measureSync(ctx, b, s, ns, keepFull, n, &r, prof)
				if ctx.Err() != nil {
					return ctx.Err() // interrupted: the run is incomplete, not failed
				}
				r.Metrics[mFloor] = floor.Seconds()
				if sync, ok := r.Metrics[mSync]; ok {
					r.Metrics[mOverFloor] = sync / floor.Seconds()
				}
				b.record(r, op, err)
			}
		}
	}
	return nil
}
