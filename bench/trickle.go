package main

import (
	"context"
	"time"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// runTrickle creates TrickleRate ConfigMaps per second for TrickleFor, one
// at a time at an even pace, and measures the latency from each create
// call's return to the start of the hook run that had its event. Each run
// has a fresh namespace.
func runTrickle(ctx context.Context, b *bench) error {
	return runFresh(ctx, b, "trickle", int(float64(b.cfg.TrickleRate)*b.cfg.TrickleFor.Seconds()), measureTrickle)
}

func measureTrickle(ctx context.Context, b *bench, s subject, ns string, n int, r *Run, prof *profiling) (*operator, error) {
	op, err := b.start(s, hookConfig(ns, nil), prof)
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	if _, err := op.WaitSync(ctx, time.Minute); err != nil {
		return op, err
	}
	objects := names("t-", 0, n)
	floor, err := b.cluster.WatchFloor(ctx, ns)
	if err != nil {
		return op, err
	}
	defer floor.Stop()
	returned := make([]time.Time, n)
	period := time.Second / time.Duration(b.cfg.TrickleRate)
	wait := prof.cpu(ctx, op, b.cfg.TrickleFor+time.Second)
	defer wait()
	begin := time.Now()
	for i, name := range objects {
		if !loop.Sleep(ctx, time.Until(begin.Add(time.Duration(i)*period))) {
			return op, ctx.Err()
		}
		if returned[i], err = b.cluster.CreateOne(ctx, ns, name); err != nil {
			return op, err
		}
	}
	missed, err := op.WaitSeen(ctx, 30*time.Second, objects)
	if ferr := setLatencies(r, objects, returned, op.out.seen, floor); ferr != nil {
		return op, ferr
	}
	r.Metrics[mMissed] = float64(missed)
	r.Metrics[mRuns] = float64(op.out.runs)
	return op, err
}
