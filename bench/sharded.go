package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// The sharded scenario's variants: replicas and each one's parallelism.
var shardedVariants = []struct{ replicas, parallelism int }{
	{1, 1}, {2, 1}, {3, 1}, {1, 4}, {3, 4},
}

func shardedVariant(replicas, parallelism int) string {
	return fmt.Sprintf("%d replica(s), parallelism %d", replicas, parallelism)
}

// runSharded measures --sharding (hook-operator only): 1, 2 and 3 replicas
// on this machine, each a process with its own identity, run the parallel
// scenario's sleeping hook (50 ms per Event context, with
// settings.sharded) over ParallelObjects ConfigMaps created in a burst.
// The figure is objects per second from the first create to the end of the
// work of the run that had the last object, over every replica; for each
// parallelism, 3 replicas' rate is also given as a multiple of one
// replica's (target: at least 2.5). Objects handled by more than one
// replica are counted (there should be none: the ring is settled before
// the burst).
func runSharded(ctx context.Context, b *bench) error {
	dirs, err := slowHookDirs(b)
	if err != nil {
		return err
	}
	s := subject{b.impls[0], bashHook}
	for rep := 1; rep <= b.cfg.Repeat; rep++ {
		rates := map[string]float64{}
		for _, v := range shardedVariants {
			n := b.cfg.ParallelObjects
			variant := shardedVariant(v.replicas, v.parallelism)
			ns, err := b.cluster.Namespace(ctx, "sharded")
			if err != nil {
				return err
			}
			r := newRun("sharded", variant, s, rep, n)
			op, err := measureSharded(ctx, b, s, dirs["sleep"], ns, v.replicas, v.parallelism, n, &r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.record(r, op, err)
			if err != nil {
				continue
			}
			rates[variant] = r.Metrics[mObjectRate]
			if one := rates[shardedVariant(1, v.parallelism)]; v.replicas == 3 && one > 0 {
				b.runs[len(b.runs)-1].Metrics[mShardScale] = r.Metrics[mObjectRate] / one
				logf("  3 replicas at parallelism %d: %.2f times one replica's rate", v.parallelism, r.Metrics[mObjectRate]/one)
			}
		}
	}
	return nil
}

func measureSharded(ctx context.Context, b *bench, s subject, hooksDir, ns string, replicas, parallelism, n int, r *Run) (*operator, error) {
	config, _ := json.Marshal(map[string]any{
		"configVersion": "v1",
		"settings":      map[string]any{"parallelism": parallelism, "sharded": true},
		"kubernetes": []any{map[string]any{
			"name": "configmaps", "kind": "ConfigMap", "jqFilter": ".metadata.name",
			"keepFullObjectsInMemory": false, "executeHookOnSynchronization": false,
			"namespace": map[string]any{"nameSelector": map[string]any{"matchNames": []string{ns}}},
		}},
	})
	const started = "sharded hooks started"
	var ops []*operator
	defer func() {
		for _, op := range ops {
			op.Stop()
		}
	}()
	for i := range replicas {
		dir, err := newRunDir(b)
		if err != nil {
			return nil, err
		}
		op, err := startOperator(launch{impl: s.impl, kubeconfig: b.cluster.kubeconfig, hooksDir: hooksDir, dir: dir, config: config,
			tmpDir: b.cfg.HookTmpDir, watchLines: []string{started},
			extra: []string{"--sharding", "--operator-namespace", ns, "--leader-elect-lease-name", "bench-sharded",
				"--leader-elect-identity", fmt.Sprintf("replica-%d", i)}})
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	for _, op := range ops {
		if _, err := op.WaitLogged(ctx, time.Minute, started); err != nil {
			return ops[0], err
		}
		if err := op.waitMetric(ctx, time.Minute, "hook_operator_shard_ring_members{", float64(replicas)); err != nil {
			return ops[0], err
		}
	}
	objects := names("s-", 0, n)
	begin := time.Now()
	if _, err := b.cluster.Create(ctx, ns, objects, b.cfg.BurstWorkers, 0); err != nil {
		return ops[0], err
	}
	deadline := time.Now().Add(time.Minute + time.Duration(n)*100*time.Millisecond/time.Duration(replicas))
	seen := map[string]time.Time{}
	handlers := map[string]int{}
	for {
		clear(seen)
		clear(handlers)
		for _, op := range ops {
			if err := op.out.poll(); err != nil {
				return ops[0], err
			}
			for name, at := range op.out.seen {
				handlers[name]++
				if prev, ok := seen[name]; !ok || at.Before(prev) {
					seen[name] = at
				}
			}
		}
		if len(seen) >= n {
			break
		}
		if time.Now().After(deadline) {
			r.Metrics[mMissed] = float64(n - len(seen))
			return ops[0], fmt.Errorf("the replicas handled %d of %d objects in time; the first one's log:\n%s", len(seen), n, ops[0].Log(20))
		}
		select {
		case <-ctx.Done():
			return ops[0], ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	twice := 0
	for _, k := range handlers {
		if k > 1 {
			twice++
		}
	}
	r.Metrics[mMissed] = 0
	r.Metrics[mTwice] = float64(twice)
	r.Metrics[mObjectRate] = float64(n) / seconds(begin, latest(maps.Values(seen)))
	runs := 0
	for _, op := range ops {
		runs += op.out.runs
	}
	r.Metrics[mRuns] = float64(runs)
	return ops[0], nil
}
