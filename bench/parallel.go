package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// A parallelVariant is the hook's work and its parallelism, and which hook
// does it.
type parallelVariant struct {
	work        string // sleep (waiting on an outside API) or spin (CPU)
	parallelism int
	// hook is bash (bench/hooks/bash/slow.sh) or go-resident (the Go hook
	// installed as sleep-go: it sleeps too).
	hook string
}

// The parallel scenario's variants: the bash hook's always, the resident
// Go hook's when --hook names go-resident.
var parallelVariants = []parallelVariant{
	{"sleep", 1, bashHook}, {"sleep", 4, bashHook}, {"sleep", 16, bashHook}, {"spin", 1, bashHook}, {"spin", 16, bashHook},
	{"sleep", 1, goResidentHook}, {"sleep", 16, goResidentHook},
}

// runParallel measures settings.parallelism (hook-operator only; shell-
// operator runs a queue's hook one process at a time). A bash hook that
// takes 50 ms per Event context, waiting (sleep) or computing (spin), gets
// ParallelObjects ConfigMaps (a quarter of them for spin) created in a
// burst; the figure is objects per second, from the first create to the
// start of the run that had the last object. For each repeat, the sleep
// variants' time per object at parallelism 16 is also given as a fraction
// of that at parallelism 1 (target: at most 0.1, that is 10 times the
// rate). The spin variants show the bound the machine's cores set.
func runParallel(ctx context.Context, b *bench) error {
	dirs, err := slowHookDirs(b)
	if err != nil {
		return err
	}
	per, err := spinIterations()
	if err != nil {
		return err
	}
	logf("  spin: %d loop iterations of bash take 50 ms of CPU here", per)
	if err := os.WriteFile(filepath.Join(dirs["spin"], "spin-iterations"), []byte(strconv.Itoa(per)+"\n"), 0o644); err != nil {
		return err
	}
	for rep := 1; rep <= b.cfg.Repeat; rep++ {
		if err := parallelRepeat(ctx, b, dirs, rep); err != nil {
			return err
		}
	}
	return nil
}

// parallelRepeat runs every variant once, and for each hook sets the sleep
// variants' cost ratio on its parallelism 16 run.
func parallelRepeat(ctx context.Context, b *bench, dirs map[string]string, rep int) error {
	rates := map[string]float64{} // by hook and variant
	sleep16 := map[string]int{}   // by hook: index in b.runs
	for _, v := range parallelVariants {
		if v.hook != bashHook && !slices.Contains(b.cfg.Hooks, v.hook) {
			continue
		}
		s := subject{b.impls[0], v.hook}
		hooksDir := dirs[v.work]
		if v.hook == goResidentHook {
			hooksDir = dirs["sleep-go"]
		}
		n := b.cfg.ParallelObjects
		if v.work == "spin" {
			n = max(n/4, 1)
		}
		variant := fmt.Sprintf("%s, parallelism %d", v.work, v.parallelism)
		ns, err := b.cluster.Namespace(ctx, "parallel")
		if err != nil {
			return err
		}
		r := newRun("parallel", variant, s, rep, n)
		op, err := measureParallel(ctx, b, s, hooksDir, ns, v.parallelism, n, &r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.record(r, op, err)
		if err == nil {
			rates[v.hook+" "+variant] = r.Metrics[mObjectRate]
		}
		if v.work == "sleep" && v.parallelism == 16 {
			sleep16[v.hook] = len(b.runs) - 1
		}
	}
	for hook, i := range sleep16 {
		one, sixteen := rates[hook+" sleep, parallelism 1"], rates[hook+" sleep, parallelism 16"]
		if one > 0 && sixteen > 0 {
			b.runs[i].Metrics[mParallelCost] = one / sixteen
			logf("  %s hook: parallelism 16 takes %.3f of parallelism 1's time per object (%.1f times the rate)", hook, one/sixteen, sixteen/one)
		}
	}
	return nil
}

// slowHookDirs installs the slow hook as sleep.sh and spin.sh, each in a
// hooks folder of its own, and returns the folders by work.
func slowHookDirs(b *bench) (map[string]string, error) {
	dirs := map[string]string{}
	data, err := os.ReadFile(filepath.Join(b.root, "bench", "hooks", "bash", "slow.sh"))
	if err != nil {
		return nil, err
	}
	for _, work := range []string{"sleep", "spin"} {
		dir := filepath.Join(b.tmp, "hooks-"+work)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, work+".sh"), data, 0o755); err != nil {
			return nil, err
		}
		dirs[work] = dir
	}
	if slices.Contains(b.cfg.Hooks, goResidentHook) {
		dir := filepath.Join(b.tmp, "hooks-sleep-go")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := buildGoHook(b.root, filepath.Join(dir, "sleep-go")); err != nil {
			return nil, err
		}
		dirs["sleep-go"] = dir
	}
	return dirs, nil
}

// spinIterations measures how many iterations of the spin hook's loop
// take 50 ms of CPU: the best of three timed runs of 100,000.
func spinIterations() (int, error) {
	const n = 100000
	best := time.Duration(0)
	for range 3 {
		cmd := exec.Command("bash", "-c", "for ((i = 0; i < "+strconv.Itoa(n)+"; i++)); do :; done")
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("timing the spin loop: %w", err)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if best == 0 || cpu < best {
			best = cpu
		}
	}
	if best <= 0 {
		return 0, fmt.Errorf("timing the spin loop: no CPU time measured")
	}
	return int(float64(n) * float64(50*time.Millisecond) / float64(best)), nil
}

func measureParallel(ctx context.Context, b *bench, s subject, hooksDir, ns string, parallelism, n int, r *Run) (*operator, error) {
	dir, err := newRunDir(b)
	if err != nil {
		return nil, err
	}
	config, _ := json.Marshal(map[string]any{
		"configVersion": "v1",
		"settings":      map[string]any{"parallelism": parallelism},
		"kubernetes": []any{map[string]any{
			"name": "configmaps", "kind": "ConfigMap", "jqFilter": ".metadata.name",
			"keepFullObjectsInMemory": false, "executeHookOnSynchronization": false,
			"namespace": map[string]any{"nameSelector": map[string]any{"matchNames": []string{ns}}},
		}},
	})
	const running = "all bindings started; running"
	// --max-parallel-hooks (4 per CPU by default: 8 on 2 cores) would cap
	// the hook's parallelism below 16; the scenario measures the setting.
	op, err := startOperator(launch{impl: s.impl, kubeconfig: b.cluster.kubeconfig, hooksDir: hooksDir, dir: dir, config: config,
		tmpDir: b.cfg.HookTmpDir, watchLines: []string{running}, resident: residentHook(s.hook),
		extra: []string{"--max-parallel-hooks", strconv.Itoa(parallelism)}})
	if err != nil {
		return nil, err
	}
	defer op.Stop()
	if _, err := op.WaitLogged(ctx, time.Minute, running); err != nil {
		return op, err
	}
	objects := names("p-", 0, n)
	begin := time.Now()
	if _, err := b.cluster.Create(ctx, ns, objects, b.cfg.BurstWorkers, 0); err != nil {
		return op, err
	}
	// 50 ms per object one at a time, and the cost of the runs.
	missed, err := op.WaitSeen(ctx, time.Minute+time.Duration(n)*100*time.Millisecond, objects)
	r.Metrics[mMissed] = float64(missed)
	if err != nil {
		return op, err
	}
	r.Metrics[mObjectRate] = float64(n) / seconds(begin, latest(maps.Values(op.out.seen)))
	r.Metrics[mRuns] = float64(op.out.runs)
	return op, nil
}
