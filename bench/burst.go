package main

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// runBurst creates BurstObjects ConfigMaps with BurstWorkers goroutines as
// fast as the API server takes them, and measures how long after the last
// create the hook has seen every event, the create-to-hook latencies, and
// the operator's own CPU time (hooks excluded) per event. Each run has a
// fresh namespace.
func runBurst(ctx context.Context, b *bench) error {
	return runFresh(ctx, b, "burst", b.cfg.BurstObjects, measureBurst)
}

func measureBurst(ctx context.Context, b *bench, s subject, ns string, n int, r *Run, prof *profiling) (*operator, error) {
	op, err := b.start(s, hookConfig(ns, nil), prof)
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	if _, err := op.WaitSync(ctx, time.Minute); err != nil {
		return op, err
	}
	objects := names("b-", 0, n)
	floor, err := b.cluster.WatchFloor(ctx, ns)
	if err != nil {
		return op, err
	}
	defer floor.Stop()
	cpuBefore, err := op.CPU()
	if err != nil {
		return op, err
	}
	treeBefore, err := op.CPUWithHooks()
	if err != nil {
		return op, err
	}
	wait := prof.cpu(ctx, op, 2*time.Second+time.Duration(n)*2500*time.Microsecond)
	defer wait()
	begin := time.Now()
	returned, err := b.cluster.Create(ctx, ns, objects, b.cfg.BurstWorkers, b.cfg.BurstRate)
	if err != nil {
		return op, err
	}
	last := latest(slices.Values(returned))
	missed, err := op.WaitSeen(ctx, time.Minute, objects)
	if ferr := setLatencies(r, objects, returned, op.out.seen, floor); ferr != nil {
		return op, ferr
	}
	r.Metrics[mMissed] = float64(missed)
	r.Metrics[mRuns] = float64(op.out.runs)
	r.Metrics[mRate] = float64(n) / seconds(begin, last)
	if err != nil {
		return op, err
	}
	r.Metrics[mDrain] = seconds(last, latest(maps.Values(op.out.seen)))
	// Let the last run finish (the operator reaps the hook, reads its
	// files, logs) before reading the CPU time.
	if !loop.Sleep(ctx, 500*time.Millisecond) {
		return op, ctx.Err()
	}
	cpuAfter, err := op.CPU()
	if err != nil {
		return op, err
	}
	treeAfter, err := op.CPUWithHooks()
	if err != nil {
		return op, err
	}
	r.Metrics[mCPUPerEvent] = float64((cpuAfter - cpuBefore).Microseconds()) / 1000 / float64(n)
	r.Metrics[mCPUWithHooks] = float64((treeAfter - treeBefore).Microseconds()) / 1000 / float64(n)
	return op, setHookRSS(r, op, s)
}
