package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// runSync fills one namespace with SyncObjects ConfigMaps once, then, for
// keepFullObjectsInMemory false and true, starts the operator on it and
// measures the time from the process start to the hook's Synchronization
// run, and memory at the peak and after settling.
func runSync(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "sync")
	if err != nil {
		return err
	}
	n := b.cfg.SyncObjects
	start := time.Now()
	if err := b.cluster.Fill(ctx, ns, "cm-", 0, n); err != nil {
		return err
	}
	logf("  created %d ConfigMaps in %s (%.0f/s)", n, time.Since(start).Round(time.Second), float64(n)/time.Since(start).Seconds())
	for _, keepFull := range []bool{false, true} {
		for rep := b.firstRepeat(); rep <= b.cfg.Repeat; rep++ {
			for _, s := range b.subjects(rep) {
				variant := fmt.Sprintf("keepFull=%t", keepFull)
				r := newRun("sync", variant, s, rep, n)
				op, err := measureSync(ctx, b, s, ns, keepFull, n, &r, b.profile("sync", variant, s, rep))
				if ctx.Err() != nil {
					return ctx.Err() // interrupted: the run is incomplete, not failed
				}
				b.record(r, op, err)
			}
		}
	}
	return nil
}

// measureSync starts the operator over the n ConfigMaps of ns and measures
// its Synchronization: the time to the hook's run, RSS when the hook has
// reported, and RSS and peak RSS after the settle time. A profiled run
// takes a CPU profile of the start-up and a heap profile after the settle.
func measureSync(ctx context.Context, b *bench, s subject, ns string, keepFull bool, n int, r *Run, prof *profiling) (*operator, error) {
	op, err := b.start(s, hookConfig(ns, &keepFull), prof)
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	wait := prof.cpu(ctx, op, 2*time.Second+time.Duration(n)*50*time.Microsecond)
	defer wait()
	sync, err := op.WaitSync(ctx, time.Minute+time.Duration(n)*time.Millisecond)
	if err != nil {
		return op, err
	}
	// Every namespace also holds the kube-root-ca.crt ConfigMap.
	if sync.Objects != n+1 {
		return op, fmt.Errorf("the Synchronization run had %d objects, want %d and kube-root-ca.crt", sync.Objects, n)
	}
	r.Metrics[mSync] = seconds(op.started, sync.At)
	if m, err := op.Memory(); err == nil {
		r.Metrics[mRSSAtSync] = mb(m.RSS)
	}
	if !loop.Sleep(ctx, b.cfg.Settle) {
		return op, ctx.Err()
	}
	m, err := op.Memory()
	if err != nil {
		return op, err
	}
	r.Metrics[mPeakRSS], r.Metrics[mRSSLater] = mb(m.Peak), mb(m.RSS)
	if m.RSS > 0 {
		r.Metrics[mPeakOver] = float64(m.Peak) / float64(m.RSS)
	}
	r.Metrics[mRSSAnon], r.Metrics[mRSSFile] = mb(m.Anon), mb(m.File)
	if c := op.Connected(); !c.IsZero() {
		r.Metrics[mConnected] = seconds(op.started, c)
	}
	prof.heap(ctx, op)
	return op, nil
}
