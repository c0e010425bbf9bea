// Command bench measures hook-operator on the local cluster: memory at
// idle, the time to the first Synchronization run over many objects, the
// latency from an object's creation to the hook run that sees it (a
// trickle and a burst of creates), the operator's CPU per event, and the
// growth of memory and start-up time with the number of watched objects.
// It runs the built binary (bin/hook-operator) with a bash hook and a Go
// hook (bench/hooks), and writes bench/results/<time>.json with every
// sample and <time>.md with the medians against the targets. `make bench`
// runs it; bench/README.md explains the scenarios and the report. `bench
// chart` draws a results file's burst latencies as an SVG (make
// bench-report).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "chart" {
		if err := runChart(os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one harness run: its settings, the cluster, the prepared hooks
// and the runs measured so far.
type bench struct {
	cfg     *Config
	root    string
	tmp     string
	cluster *cluster
	// hooksDirs maps a hook kind to a hooks folder holding only that hook.
	hooksDirs map[string]string
	// impls are the operators measured: ours first, then the reference
	// unless --reference=none.
	impls []*implementation
	// profileDir holds the profiles of this harness run, "" when it
	// profiles nothing.
	profileDir string
	runs       []Run
}

// scenarios maps each scenario to the function that runs it.
var scenarios = map[string]func(context.Context, *bench) error{
	"idle":      runIdle,
	"sync":      runSync,
	"trickle":   runTrickle,
	"burst":     runBurst,
	"admission": runAdmission,
	"failover":  runFailover,
	"parallel":  runParallel,
	"sharded":   runSharded,
	"scale":     runScale,
}

func run(ctx context.Context, cfg *Config) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, root: root}
	binary := inRoot(root, cfg.Binary)
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("the operator binary: %w (run make build, or use make bench)", err)
	}
	im, err := hookOperator(binary)
	if err != nil {
		return err
	}
	b.impls = append(b.impls, im)
	if cfg.Reference != "none" {
		ref, err := referenceBinary(root, cfg.Reference)
		if err != nil {
			return err
		}
		if im, err = shellOperator(ref); err != nil {
			return err
		}
		b.impls = append(b.impls, im)
	}
	started := time.Now()
	stamp := started.UTC().Format("20060102T150405Z")
	out := inRoot(root, cfg.Out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if cfg.Profile {
		if !b.impls[0].pprof {
			return fmt.Errorf("--profile: %s has no --pprof and --debug-socket", binary)
		}
		b.profileDir = filepath.Join(out, "profiles-"+stamp)
		if err := os.MkdirAll(b.profileDir, 0o755); err != nil {
			return err
		}
	}
	if b.tmp, err = os.MkdirTemp("", "hook-operator-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	if b.cluster, err = connect(ctx, root, cfg.Kubeconfig); err != nil {
		return err
	}
	if err := b.cluster.WaitLeftovers(ctx); err != nil {
		return err
	}
	if b.hooksDirs, err = prepareHooks(root, b.tmp, cfg.Hooks); err != nil {
		return err
	}

	report := &Report{Started: started, Config: cfg, Machine: describeMachine(root, b.impls)}
	logf("benchmark: scenarios %v, hooks %v, operators %s, %d run(s) each; cluster %s", cfg.Scenarios, cfg.Hooks,
		report.Machine.Operators(), cfg.Repeat, b.cluster.kubeconfig)
	var failed []string
	for _, name := range cfg.Scenarios {
		start := time.Now()
		logf("== %s", name)
		err := scenarios[name](ctx, b)
		if ctx.Err() != nil {
			report.Interrupted = true
			break
		}
		if err != nil {
			logf("%s: %v", name, err)
			failed = append(failed, name)
		}
		logf("== %s took %s", name, time.Since(start).Round(time.Second))
	}
	b.cluster.Cleanup()

	report.Finished = time.Now()
	report.DurationS = report.Finished.Sub(report.Started).Seconds()
	report.Machine.LoadAfter = loadAverage()
	report.Runs = b.runs
	report.Summaries = summarize(cfg, b.runs)
	report.PerObject = perObject(report.Summaries)
	md, err := writeReport(out, stamp, report)
	if err != nil {
		return err
	}
	fmt.Print(md)
	switch {
	case report.Interrupted:
		return errors.New("interrupted; the report holds what was measured")
	case len(failed) > 0:
		return fmt.Errorf("scenarios %v failed; the report holds what was measured", failed)
	}
	return nil
}

// writeReport writes <timestamp>.json and .md to dir and, for a full run
// (Config.Full), copies them to latest.json and latest.md; it returns the
// Markdown.
func writeReport(dir, stamp string, r *Report) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	md := r.Markdown()
	type file struct {
		name string
		data []byte
	}
	full := r.Config.Full()
	files := []file{{stamp + ".json", data}, {stamp + ".md", []byte(md)}}
	if full {
		files = append(files, file{"latest.json", data}, file{"latest.md", []byte(md)})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return "", err
		}
	}
	if full {
		logf("wrote %s and latest.{json,md}", filepath.Join(dir, stamp+".{json,md}"))
	} else {
		logf("wrote %s (not latest.{json,md}: not a full run)", filepath.Join(dir, stamp+".{json,md}"))
	}
	return md, nil
}

// start starts the subject's operator with its hook, configured by config;
// with prof, it serves pprof profiles.
func (b *bench) start(s subject, config []byte, prof *profiling) (*operator, error) {
	dir, err := newRunDir(b)
	if err != nil {
		return nil, err
	}
	return startOperator(launch{impl: s.impl, kubeconfig: b.cluster.kubeconfig, hooksDir: b.hooksDirs[s.hook],
		dir: dir, config: config, tmpDir: b.cfg.HookTmpDir, pprof: prof != nil, resident: residentHook(s.hook)})
}

// newRunDir makes a folder of its own for one operator of this harness run.
func newRunDir(b *bench) (string, error) { return os.MkdirTemp(b.tmp, "run-") }

// referenceBinary returns the shell-operator binary of --reference: the
// pinned one (built once by hack/tools/shell-operator.sh) for "pinned",
// else the path given.
func referenceBinary(root, flag string) (string, error) {
	if flag != "pinned" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("--reference: %w", err)
		}
		return flag, nil
	}
	cmd := exec.Command(filepath.Join(root, "hack", "tools", "shell-operator.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the pinned shell-operator (hack/tools/shell-operator.sh): %w; or give --reference=none", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// record keeps a finished run: its error, if any, and the operator's
// failed hook runs; metrics that could not be computed are left out.
func (b *bench) record(r Run, op *operator, err error) {
	if op != nil {
		r.HookFailures = op.Failures()
	}
	if err != nil {
		r.Error = err.Error()
	}
	for k, v := range r.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(r.Metrics, k)
		}
	}
	r.Profiled = r.Repeat == 0
	b.runs = append(b.runs, r)
	name := r.Scenario
	if r.Variant != "" {
		name += " " + r.Variant
	}
	if r.Profiled {
		name += " (profiled: not in the medians)"
	}
	if err != nil {
		logf("  %s, %s, %s hook, run %d: FAILED: %v", name, r.Operator, r.Hook, r.Repeat, err)
		return
	}
	line := fmt.Sprintf("  %s, %s, %s hook, run %d:", name, r.Operator, r.Hook, r.Repeat)
	for _, m := range []string{mObjectRate, mParallelCost, mShardScale, mTwice, mFailover, mLeaseTaken, mTakeoverSync, mStandbyRSS, mLeaderRSS, mLeaderReqs, mStandbyReqs, mAdmBaseP50, mAdmAddedP50, mAdmAddedP99, mAdmFreeRate, mAdmRate, mAdmRateGain, mAdmDirectRate, mAdmDirectGain, mFloor, mSync, mOverFloor, mRSS, mPeakRSS, mRSSLater, mPeakOver, mRate, mDrain, mP50, mP99, mCPUPerEvent, mCPUWithHooks, mHookRSS, mHookProcesses, mRuns, mMissed} {
		if v, ok := r.Metrics[m]; ok {
			line += fmt.Sprintf(" %s %s,", m, formatValue(m, v))
		}
	}
	if r.HookFailures > 0 {
		line += fmt.Sprintf(" %d failed hook runs,", r.HookFailures)
	}
	logf("%s", line[:len(line)-1])
}

// newRun starts the record of one run.
func newRun(scenario, variant string, s subject, repeat, objects int) Run {
	return Run{Scenario: scenario, Variant: variant, Operator: s.impl.name, Hook: s.hook, Repeat: repeat, Objects: objects,
		Metrics: map[string]float64{}, Started: time.Now().UTC().Format(time.RFC3339)}
}

// mb converts bytes to MiB.
func mb(n int64) float64 { return float64(n) / (1 << 20) }

// seconds is the time from a to b in seconds.
func seconds(a, b time.Time) float64 { return b.Sub(a).Seconds() }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// repoRoot returns the root of the hook-operator module, found by walking up
// from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "bench", "hooks", "bash", "hook.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the harness inside the hook-operator repository (make bench)")
		}
		dir = parent
	}
}

// inRoot resolves a path given relative to the repository root.
func inRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// measureFunc measures one run of a scenario with n objects in namespace
// ns, filling r; it returns the operator it started, for the record.
type measureFunc func(ctx context.Context, b *bench, s subject, ns string, n int, r *Run, prof *profiling) (*operator, error)

// runFresh runs a scenario that creates its n objects while it measures:
// every repeat of every hook gets a fresh namespace.
func runFresh(ctx context.Context, b *bench, scenario string, n int, measure measureFunc) error {
	for rep := b.firstRepeat(); rep <= b.cfg.Repeat; rep++ {
		for _, s := range b.subjects(rep) {
			ns, err := b.cluster.Namespace(ctx, scenario)
			if err != nil {
				return err
			}
			r := newRun(scenario, "", s, rep, n)
			op, err := measure(ctx, b, s, ns, n, &r, b.profile(scenario, "", s, rep))
			if ctx.Err() != nil {
				return ctx.Err() // interrupted: the run is incomplete, not failed
			}
			b.record(r, op, err)
		}
	}
	return nil
}
