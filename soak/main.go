// Command soak runs hook-operator for a long time with every mechanism at
// once and faults on a schedule, and checks that it keeps its promises and
// that its resources stay flat. Three replicas with --sharding run a
// level-triggered mirror hook (soak/hook/mirror.sh) and a validating
// webhook on a cluster of their own (HOOK_OPERATOR_CLUSTER=soak, so that
// stopping its control plane disturbs no test), while the harness creates,
// updates and deletes source ConfigMaps. `make soak` runs it
// (SOAK_DURATION, default 30m); docs/soak.md explains the checks, the
// bounds and the report written to soak/results/. `soak chart` draws a
// saved run's memory over time as an SVG (make bench-report).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// The soak's bounds (docs/soak.md).
const (
	// convergeBound is how long after a fault ends (or after churn pauses
	// at a checkpoint) every source must have its mirror and no orphan be
	// left. A killed leader's Lease expires after 15 s; the rest is the
	// restart, the resynchronization and the runs.
	convergeBound = 90 * time.Second
	// takeoverWindow is how long after a fault two replicas may both
	// handle a namespace: the ring settles after a member leaves or joins.
	takeoverWindow = 60 * time.Second
	// sampleEvery is the period of the resource samples.
	sampleEvery = 5 * time.Second
	// checkpointEvery is how often, between faults, churn pauses for a
	// convergence measurement.
	checkpointEvery = 60 * time.Second
	replicas        = 3
	namespaces      = 6
	// maxSources bounds the source ConfigMaps alive at once.
	maxSources = 60
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "chart" {
		if err := runChart(os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		return
	}
	duration := flag.Duration("duration", 30*time.Minute, "how long the soak runs, faults and churn included")
	warmup := flag.Duration("warmup", 0, "time before faults start and resource growth is fitted (0: 5m, or a sixth of --duration if less)")
	binary := flag.String("binary", "bin/hook-operator", "the operator binary")
	out := flag.String("results", "soak/results", "folder for the summary, samples and plots")
	heap := flag.Bool("heap-profiles", false, "start the replicas with --pprof and save their heap profiles at the end of the warm-up and at the end; "+
		"this turns the Go runtime's sampling of allocations on, whose records add to RSS for hours, so the growth check then fails on what users do not run")
	again := flag.String("rejudge", "", "judge a saved run (soak/results/<time>.json) again with this build's bounds, rewriting its summary and plots; runs nothing")
	flag.Parse()
	if *again != "" {
		if err := rejudge(*again); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		return
	}
	if *warmup == 0 {
		*warmup = min(5*time.Minute, *duration/6)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, options{duration: *duration, warmup: *warmup, binary: *binary, results: *out, heapProfiles: *heap}); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// soak is one run's state.
type soak struct {
	start    time.Time
	client   kubernetes.Interface
	kwokctl  string
	workdir  string
	dir      string // the run's private folder (hooks, logs, certs)
	hooksDir string
	proxy    *throttleProxy
	replicas []*replica
	churn    *churner
	// heapProfiles: the replicas serve pprof, and their heap profiles
	// are saved (--heap-profiles).
	heapProfiles bool

	mu          sync.Mutex
	faults      []faultRecord
	current     faultKind // the fault in progress, until its convergence is measured
	checkpoints []checkpoint
	samples     []sample
	webhook     webhookTally
	problems    []string
}

// A faultRecord is an injected fault and what followed it.
type faultRecord struct {
	Kind     faultKind
	Target   string
	At, Done time.Duration // since start: injected, and its recovery action finished
	Converge time.Duration // from Done to convergence; -1: not within convergeBound
}

// A checkpoint is one convergence measurement.
type checkpoint struct {
	At       time.Duration
	After    faultKind // "" for a checkpoint between faults
	Converge time.Duration
	OK       bool
	Detail   string
}

// A sample is one replica's resources at one moment.
type sample struct {
	At         time.Duration
	Replica    string
	Pid        int
	Started    time.Duration // the process's start, since the soak's
	Proc       procSample
	Goroutines float64
	Queue      float64
	HeapLive   float64 // go_gc_heap_live_bytes: what the last collection found live
	Mem        goMem   // where the Go runtime's memory is, to tell what an RSS rise is
	MetricsErr bool
}

// goMem is the Go runtime's account of its memory (the go_memstats_*
// series): beside RssAnon, it tells a growing heap from memory the
// runtime holds free and has not yet returned to the kernel, and from
// stacks.
type goMem struct {
	HeapInuse    float64 // spans holding objects
	HeapIdle     float64 // free spans, returned to the kernel or not
	HeapReleased float64 // free spans returned to the kernel
	StackInuse   float64
	Sys          float64 // everything the runtime has mapped
}

// goMemMetrics are the series goMem is read from.
var goMemMetrics = []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
	"go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes"}

func readGoMem(m map[string]float64) goMem {
	return goMem{HeapInuse: m[goMemMetrics[0]], HeapIdle: m[goMemMetrics[1]], HeapReleased: m[goMemMetrics[2]],
		StackInuse: m[goMemMetrics[3]], Sys: m[goMemMetrics[4]]}
}

// options are the soak's flags.
type options struct {
	duration, warmup time.Duration
	binary, results  string
	heapProfiles     bool // the replicas run with --pprof, their heap profiles are saved
}

func run(ctx context.Context, o options) error {
	duration, warmup, binary, out := o.duration, o.warmup, o.binary, o.results
	faults, err := schedule(duration, warmup, 2*time.Minute, 2*time.Minute+30*time.Second)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	binary, err = filepath.Abs(binary)
	if err != nil {
		return err
	}
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("the operator binary: %w (run make build, or use make soak)", err)
	}
	s := &soak{heapProfiles: o.heapProfiles}
	if err := s.setup(ctx, root, binary); err != nil {
		return err
	}
	defer s.teardown()
	logf("3 replicas up; %d faults from %s on, one every %s; the run ends at %s", len(faults), warmup,
		(faults[1].At - faults[0].At).Round(time.Second), s.start.Add(duration).Format("15:04:05"))

	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.sampleLoop(runCtx) })
	wg.Go(func() { s.churn.loop(runCtx) })
	wg.Go(func() { s.webhookLoop(runCtx) })
	if s.heapProfiles {
		wg.Go(func() {
			// Heap profiles where a growth can be read: at the end of the
			// warm-up and at the end (before the replicas go idle).
			if loop.Sleep(runCtx, warmup) {
				s.saveHeapProfiles(ctx, out, "warm")
			}
		})
	}
	s.faultLoop(runCtx, faults)
	wg.Wait()
	if s.heapProfiles {
		s.saveHeapProfiles(ctx, out, "end")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The end: churn stopped; everything converges, then the replicas go
	// idle and must have no hook process nor temp file left.
	end := s.measureConvergence(ctx, "")
	s.mu.Lock()
	s.checkpoints = append(s.checkpoints, end)
	s.mu.Unlock()
	s.idleCheck(ctx)
	rep := s.report(warmup)
	return rep.verdict(rep.write(out, s.start))
}

// setup starts the soak cluster (or reuses it), the proxy and the three
// replicas, and waits until the mirrors converge once.
func (s *soak) setup(ctx context.Context, root, binary string) error {
	own := "HOOK_OPERATOR_CLUSTER=soak"
	kubeconfig, err := localcluster.Up(ctx, root, own)
	if err != nil {
		return err
	}
	bin, err := localcluster.Binaries(ctx, root, own)
	if err != nil {
		return err
	}
	s.kwokctl, s.workdir = filepath.Join(bin, "kwokctl"), filepath.Join(filepath.Dir(kubeconfig), "kwok")
	cfg, err := localcluster.Config(kubeconfig, 200, 400)
	if err != nil {
		return err
	}
	if s.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if s.dir, err = os.MkdirTemp("", "hook-operator-soak-"); err != nil {
		return err
	}
	certs := filepath.Join(s.dir, "certs")
	if err := localcerts.Write(certs, "hook-operator soak CA"); err != nil {
		return err
	}
	if s.proxy, err = startProxy(cfg, certs); err != nil {
		return err
	}
	proxyConfig := filepath.Join(s.dir, "kubeconfig")
	if err := writeKubeconfig(proxyConfig, s.proxy.Host(), filepath.Join(certs, "ca.crt")); err != nil {
		return err
	}
	if err := s.prepareCluster(ctx); err != nil {
		return err
	}
	s.hooksDir = filepath.Join(s.dir, "hooks")
	if err := os.MkdirAll(s.hooksDir, 0o700); err != nil {
		return err
	}
	hook, err := os.ReadFile(filepath.Join(root, "soak/hook/mirror.sh"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.hooksDir, "mirror.sh"), hook, 0o700); err != nil {
		return err
	}
	config := filepath.Join(s.dir, "mirror-config.json")
	if err := os.WriteFile(config, []byte(mirrorConfig), 0o600); err != nil {
		return err
	}
	s.start = time.Now()
	for i := range replicas {
		id := fmt.Sprintf("replica-%d", i)
		port, err := localcluster.FreePort()
		if err != nil {
			return err
		}
		tmp := filepath.Join(s.dir, id+"-tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return err
		}
		r := &replica{id: id, tmpDir: tmp, logPath: filepath.Join(s.dir, id+".log"),
			env: []string{"SOAK_CONFIG=" + config, "SOAK_DIR=" + s.dir, "SOAK_REPLICA=" + id},
			args: []string{binary, "start", "--hooks-dir", s.hooksDir, "--kubeconfig", proxyConfig,
				"--log-format", "json", "--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--tmp-dir", tmp,
				"--shutdown-grace-period", "5s", "--hooks-reload-poll-period", "2s",
				"--sharding", "--shard-by", "namespace", "--operator-namespace", systemNamespace,
				"--leader-elect-lease-name", "soak", "--leader-elect-identity", id,
				"--webhook-listen-address", "127.0.0.1:" + port, "--webhook-url", "https://127.0.0.1:" + port,
				"--webhook-cert", filepath.Join(certs, "tls.crt"), "--webhook-key", filepath.Join(certs, "tls.key"),
				"--webhook-ca", filepath.Join(certs, "ca.crt"), "--webhook-configuration-name", "hook-operator-soak-" + id,
				"--debug-socket", filepath.Join(s.dir, id+".sock")}}
		if s.heapProfiles {
			r.args = append(r.args, "--pprof")
		}
		if i == 0 {
			// The witness: no fault kills it, and it never takes the
			// Lease (--leader-elect-standby), so that neither a
			// term-leader nor the leader's exit in a 429 burst or a
			// control-plane stop ends it. The growth check gets a
			// process that runs for the whole soak (docs/soak.md).
			r.args = append(r.args, "--leader-elect-standby")
		}
		if err := r.start(); err != nil {
			return err
		}
		s.replicas = append(s.replicas, r)
	}
	s.churn = newChurner(s.client)
	if err := s.churn.seed(ctx, maxSources/2); err != nil {
		return err
	}
	c := s.measureConvergence(ctx, "")
	if !c.OK {
		return fmt.Errorf("the first convergence: %s; the replicas' logs are in %s", c.Detail, s.dir)
	}
	logf("first convergence in %s", c.Converge.Round(100*time.Millisecond))
	return nil
}

// teardown stops the replicas and removes the run's folder and webhook
// configurations; the namespaces stay for the next run to empty.
func (s *soak) teardown() {
	for _, r := range s.replicas {
		_ = r.signal(syscall.SIGTERM, 15*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, r := range s.replicas {
		_ = s.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "hook-operator-soak-"+r.id, deleteNow)
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// since is the time since the soak started.
func (s *soak) since() time.Duration { return time.Since(s.start) }

func (s *soak) problem(format string, args ...any) {
	msg := fmt.Sprintf("%s: ", s.since().Round(time.Second)) + fmt.Sprintf(format, args...)
	logf("PROBLEM %s", msg)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
}

// kwok stops or starts the soak cluster's control plane.
func (s *soak) kwok(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, s.kwokctl, verb, "cluster", "--name", "soak")
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+s.workdir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kwokctl %s cluster soak: %w\n%s", verb, err, out)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for the proxy: no credentials (the
// proxy adds the harness's).
func writeKubeconfig(path, server, ca string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: soak-proxy
  cluster: {server: %q, certificate-authority: %q}
users:
- name: soak
  user: {}
contexts:
- name: soak
  context: {cluster: soak-proxy, user: soak}
current-context: soak
`, server, ca)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// random picks one of n.
func random(n int) int { return rand.IntN(n) }

var errNoLeader = errors.New("no replica holds the Lease")
