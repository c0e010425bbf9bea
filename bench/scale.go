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
//
// With --scale-namespace the ConfigMaps are made in that namespace, once:
// a later run finds them there and creates only what is missing (300,000
// take minutes to create), as long as the namespace holds no more than the
// first size.
func runScale(ctx context.Context, b *bench) error {
	ns, have, err := scaleNamespace(ctx, b)
	if err != nil {
		return err
	}
	s := subject{b.impls[0], b.cfg.Hooks[0]}
	for _, n := range b.cfg.ScaleSizes {
		if n < have {
			return fmt.Errorf("--scale-namespace %s holds %d of the scale scenario's ConfigMaps, more than the size %d: "+
				"give --scale-sizes of at least %d, or another namespace", ns, have, n, have)
		}
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

// scaleNamespace returns the scale scenario's namespace and how many of its
// ConfigMaps (cm-000000 on) it holds: a fresh one, or --scale-namespace,
// where the ConfigMaps missing from the first ones are created first, so
// that what it holds is cm-000000 to the count.
func scaleNamespace(ctx context.Context, b *bench) (string, int, error) {
	if b.cfg.ScaleNamespace == "" {
		ns, err := b.cluster.Namespace(ctx, "scale")
		return ns, 0, err
	}
	ns, err := b.cluster.KeptNamespace(ctx, b.cfg.ScaleNamespace)
	if err != nil {
		return "", 0, err
	}
	present, err := b.cluster.Present(ctx, ns, "cm-")
	if err != nil {
		return "", 0, err
	}
	var missing []string
	for _, name := range names("cm-", 0, len(present)) {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	// Names past the count stand for the missing ones (a fill that was
	// interrupted); fewer present below the count means more above it.
	if len(missing) > 0 {
		return "", 0, fmt.Errorf("--scale-namespace %s holds %d ConfigMaps named cm-* that are not cm-000000 to cm-%06d: "+
			"delete the namespace (kubectl delete namespace %s) or name another", ns, len(missing), len(present)-1, ns)
	}
	logf("  reusing the %d ConfigMaps of %s", len(present), ns)
	return ns, len(present), nil
}
