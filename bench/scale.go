package main

import (
	"context"
	"fmt"
	"time"
)

// runScale grows one namespace through ScaleSizes ConfigMaps and measures
// at each size what sync measures, for keepFullObjectsInMemory false and
// true, with the first hook only: it is the runtime's cost per object that
// is of interest, and the hook only marks the Synchronization.
func runScale(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "scale")
	if err != nil {
		return err
	}
	kind := b.cfg.Hooks[0]
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
				r := newRun("scale", variant, kind, rep, n)
				prof := b.profile("scale", fmt.Sprintf("%s-%d", variant, n), kind, rep)
				op, err := measureSync(ctx, b, kind, ns, keepFull, n, &r, prof)
				if ctx.Err() != nil {
					return ctx.Err() // interrupted: the run is incomplete, not failed
				}
				b.record(r, op, err)
			}
		}
	}
	return nil
}
