package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// runIdle measures the operator's memory with one binding and nothing to
// watch: started, Synchronization (of no objects) run, then settled.
func runIdle(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "idle")
	if err != nil {
		return err
	}
	for rep := b.firstRepeat(); rep <= b.cfg.Repeat; rep++ {
		for _, s := range b.subjects(rep) {
			r := newRun("idle", "", s, rep, 0)
			op, err := measureIdle(ctx, b, s, ns, &r, b.profile("idle", "", s, rep))
			if ctx.Err() != nil {
				return ctx.Err() // interrupted: the run is incomplete, not failed
			}
			b.record(r, op, err)
		}
	}
	return nil
}

func measureIdle(ctx context.Context, b *bench, s subject, ns string, r *Run, prof *profiling) (*operator, error) {
	op, err := b.start(s, hookConfig(ns, nil), prof)
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	sync, err := op.WaitSync(ctx, time.Minute)
	if err != nil {
		return op, err
	}
	r.Metrics[mSync] = seconds(op.started, sync.At)
	if !loop.Sleep(ctx, b.cfg.Settle) {
		return op, ctx.Err()
	}
	m, err := op.Memory()
	if err != nil {
		return op, err
	}
	r.Metrics[mRSS], r.Metrics[mPeakRSS] = mb(m.RSS), mb(m.Peak)
	r.Metrics[mRSSAnon], r.Metrics[mRSSFile] = mb(m.Anon), mb(m.File)
	prof.heap(ctx, op)
	return op, setHookRSS(r, op, s)
}

// setHookRSS records, for a resident variant with ours, the RSS of its
// resident hook process(es) (one for parallelism 1), read between runs.
func setHookRSS(r *Run, op *operator, s subject) error {
	if !residentHook(s.hook) || s.impl.name != ours {
		return nil
	}
	rss, n, err := op.HookRSS()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the %s hook: no resident hook process under the operator (pid %d)", s.hook, op.Pid())
	}
	r.Metrics[mHookRSS] = mb(rss) / float64(n)
	r.Metrics[mHookProcesses] = float64(n)
	return nil
}
