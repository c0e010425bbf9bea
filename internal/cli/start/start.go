// Package start implements `hook-operator start`: load the hooks, connect
// to the cluster, and run the operator until a stop signal.
package start

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/buildinfo"
	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/cli/kubeflags"
	"github.com/hook-operator/hook-operator/internal/dryrun"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/memlimit"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/procs"
	"github.com/hook-operator/hook-operator/internal/tracing"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// Flags holds the start command's settings.
type Flags struct {
	HooksDir string
	TmpDir   string
	// Kube chooses the cluster.
	Kube          kubeflags.Flags
	QPS           float32
	Burst         int
	HookTimeout   time.Duration
	ConfigTimeout time.Duration
	// DisabledHooks are hook names or globs not to load (--disabled-hooks).
	DisabledHooks []string
	// HooksFolder says which symlinks of the hooks folder are followed
	// (--hooks-allow-external-symlinks).
	HooksFolder  hook.FolderOptions
	RetryInitial time.Duration
	RetryMax     time.Duration
	BatchWindow  BatchWindow
	// BatchFill ends a batch window early (queue.Options.BatchFill and
	// ResidentBatchFill).
	BatchFill     BatchFill
	MaxParallel   int
	WatchIdle     time.Duration
	ShutdownGrace time.Duration
	// MaxHookOutput bounds each file a hook writes and its --config output.
	MaxHookOutput ByteSize
	// AdaptProcs has GOMAXPROCS follow the load (internal/procs).
	AdaptProcs bool
	// SteadySysmon starts the operator again with the Go runtime's monitor
	// thread kept from its deep sleep (internal/procs).
	SteadySysmon bool
	// ListenAddress is the metrics and health listener; "" disables it.
	ListenAddress string
	// ListenMaxConns caps the open connections of that listener and of
	// the debug socket, each.
	ListenMaxConns int
	// HealthListenAddress is the probe listener, serving /healthz and
	// /readyz alone; "" disables it.
	HealthListenAddress string
	// MetricsPrefix starts the names of the operator's own metrics.
	MetricsPrefix string
	// ShellMetricsPrefix, when not empty, serves shell-operator's own
	// metric families beside the operator's, with this prefix.
	ShellMetricsPrefix string
	// TracingEndpoint is where traces go (see package tracing); empty:
	// the standard OTEL_EXPORTER_OTLP_* variables, and without them none.
	TracingEndpoint string
	// HookMetricsMaxSeriesPerHook and HookMetricsMaxSeries cap the series
	// of hooks' metrics, each hook's and all together; 0: no cap.
	HookMetricsMaxSeriesPerHook, HookMetricsMaxSeries int
	// RestrictWrites fails runs whose operations write outside their
	// hook's declared writes (--restrict-writes).
	RestrictWrites bool
	// MetricsSecure serves /metrics over HTTPS on MetricsSecureAddress to
	// callers with a token allowed to get it (TokenReview and
	// SubjectAccessReview), and not on ListenAddress.
	MetricsSecure        bool
	MetricsSecureAddress string
	// MetricsCert and MetricsKey are its certificate; empty: self-signed.
	MetricsCert, MetricsKey string
	DebugSocket             string
	DebugHTTP               bool
	Pprof                   bool
	// DryRun is "" (write to the cluster), "client" or "server".
	DryRun      string
	Output      string
	ShowSecrets bool
	// Webhook configures the admission webhook server.
	Webhook WebhookFlags
	Leader  LeaderFlags
	Shard   ShardFlags
	Reload  ReloadFlags

	// givenAs names how the user gave a setting, by its flag (see
	// envflag.GivenAs): "" when it has its default. Nil: by its flag.
	givenAs func(flag string) string
}

// New returns the start command. log is configured by the root command
// before the command runs.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the hooks in a folder as an operator against the cluster",
		Long: `start loads every hook under --hooks-dir (running each with --config),
stops with every configuration error at once if any is invalid, connects to the
cluster, and runs the hooks: onStartup hooks first, then the kubernetes
bindings (Synchronization, then events), then schedules.

While it runs, a change of the hooks folder (a ConfigMap volume's update
included) is reloaded without a restart: new hooks and bindings start, removed
ones stop, changed bindings start anew with a Synchronization, unchanged ones go
on. If any configuration is then invalid, nothing changes and the error is
logged, counted (hooks_reload_total) and left as an Event on the operator's Pod.
--hooks-reload=false reads the hooks at start-up only.

The cluster comes from --kubeconfig, else $KUBECONFIG, else ~/.kube/config,
else the Pod's ServiceAccount. On SIGTERM or SIGINT the operator takes no new
work, lets running hooks finish within --shutdown-grace-period, and exits 0.

--dry-run runs the hooks as usual but applies nothing, and prints every run
to stdout: the binding contexts, the operations the hook wrote, and what they
would change (logs stay on stderr; docs/testing.md describes the format).
--dry-run (or --dry-run=client) shows each change as a diff against the live
object and needs only read permissions; --dry-run=server sends every write with
dryRun=All and prints what the API server answered: the resulting object, or
why it refused (schema validation, admission). Finalizers are not added or
removed. Secret data is masked unless --show-secrets.

Each flag is described in full, with its environment variables and
shell-operator's names for it, in docs/operating.md (Settings).`,
		Example: `  hook-operator start --hooks-dir ./hooks
  hook-operator start --hooks-dir ./hooks --dry-run -o yaml
  hook-operator start --hooks-dir ./hooks --dry-run=server
  HOOK_OPERATOR_HOOKS_DIR=/hooks hook-operator start --log-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.givenAs = func(flag string) string { return envflag.GivenAs(cmd.Flags(), flag) }
			if f.SteadySysmon {
				// First, before anything starts: the process is replaced.
				if err := procs.SteadySysmon(); err != nil {
					log.WithError(err).Warn("--steady-sysmon: going on without")
				}
			}
			// After the step above, which starts the process again: one
			// warning each, from the process that runs.
			for _, msg := range envflag.Given(cmd.Flags(), os.LookupEnv) {
				log.Warn(msg)
			}
			sampleAllocations(f.Pprof)
			mem := memlimit.Set(memlimit.CgroupRoot)
			log.WithFields(logrus.Fields{"containerLimit": limit.Size(mem.Container), "goMemoryLimit": limit.Size(mem.Limit)}).Info("memory limit: " + mem.Reason)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return f.givenNames(Run(ctx, f, stdout, log))
		},
	}
	bindFlags(cmd.Flags(), &f)
	return cmd
}

// defaultMemProfileRate is the Go runtime's own: one allocation sampled
// per 512 KiB allocated.
const defaultMemProfileRate = 512 << 10

// sampleAllocations turns the Go runtime's sampling of allocations for
// heap profiles off unless --pprof can serve them. Each sampled call stack
// gets a record that is never freed, and the first one a 1.4 MB hash
// table whose pages become resident one by one as records fill it: over
// hours of varied work new stacks keep coming, and the operator's RSS grew
// by 5-10% an hour with its heap flat (the soak, docs/soak.md). Without
// --pprof nothing reads those records.
func sampleAllocations(pprof bool) {
	if pprof {
		runtime.MemProfileRate = defaultMemProfileRate
	} else {
		runtime.MemProfileRate = 0
	}
}

// bindFlags defines start's flags on fs, from its table (Settings) and
// shell-operator's settings it takes and ignores (Ignored).
func bindFlags(fs *pflag.FlagSet, f *Flags) {
	envflag.Define(fs, Settings(f)...)
	envflag.DefineIgnored(fs, Ignored...)
}

// Run loads the hooks and runs the operator until ctx ends. Dry-run
// output goes to stdout. It checks the flags, sets the process up, loads
// the hooks, and hands the parts over to a manager (see compose.go).
func Run(ctx context.Context, f Flags, stdout io.Writer, log *logrus.Logger) error {
	if err := f.check(); err != nil {
		return err
	}
	traces, err := tracing.FromEnv(f.TracingEndpoint, os.Getenv)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var w *transcript.Writer
	if f.DryRun != "" {
		var err error
		if w, err = transcript.NewWriter(stdout, f.Output); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
	}
	adoptOrphans(ctx, log)
	env := tracing.HookEnv(procs.HookEnv(os.Environ()))
	load := hook.LoadOptions{
		ConfigTimeout:  f.ConfigTimeout,
		MaxConfigBytes: int64(f.MaxHookOutput),
		Env:            env,
		Warn:           func(msg string) { log.Warn(msg) },
		Disabled:       f.DisabledHooks,
		Folder:         f.HooksFolder,
		Skip:           func(s hook.Skipped) { logSkipped(log, s) },
	}
	// The connections to the API server are opened while the hooks load
	// (each hook's --config run); a configuration that names no cluster is
	// reported after the hooks' errors, as before.
	m := metrics.New(f.MetricsPrefix)
	if f.ShellMetricsPrefix != "" {
		if err := m.ServeShellOperator(f.ShellMetricsPrefix); err != nil {
			return f.metricsPrefixesError(err)
		}
	}
	m.ObserveKubeClient()
	cfg, clients, connErr := newClients(f)
	vctx, cancelVersion := context.WithTimeout(ctx, versionTimeout)
	defer cancelVersion()
	var version func() (kube.Version, error)
	if connErr == nil {
		version = clients.Preconnect(vctx)
	}
	// Taken before the load, so that a change made during it is reloaded.
	var fingerprint string
	if f.Reload.Enabled {
		fingerprint = hook.Fingerprint(f.HooksDir, f.HooksFolder)
	}
	hooks, err := loadHooks(ctx, f.HooksDir, load, log)
	if err != nil {
		return err
	}
	warnParallelCap(hooks, f.MaxParallel, log)
	warnExposures(f, hooks, log)
	if f.RestrictWrites {
		warnUndeclaredWrites(hooks, log)
	}
	if f.AdaptProcs {
		pctx, stopProcs := context.WithCancel(ctx)
		defer stopProcs()
		go procs.Govern(pctx, procs.Options{}, log)
	}
	m.Hooks.SetLimits(metrics.HookLimits{PerHook: f.HookMetricsMaxSeriesPerHook, Total: f.HookMetricsMaxSeries, Warn: func(msg string) { log.Warn(msg) }})
	if connErr != nil {
		return connErr
	}
	serverVersion(version, cfg.Host, log)
	p := &parts{f: f, hooks: hooks, load: load, fingerprint: fingerprint, m: m, cfg: cfg, clients: clients, dryRun: w != nil, log: log}
	opts := p.options(env)
	if opts.Tracer, err = startTracing(ctx, traces, log); err != nil {
		return err
	}
	defer stopTracing(opts.Tracer, log)
	if w != nil {
		dryRun(&opts, f, clients, w, log)
		log.WithField("mode", f.DryRun).Warn("dry-run: nothing is written to the cluster")
	}
	mgr, err := p.compose(ctx, opts)
	if p.members != nil {
		// Leave the ring at once if start-up fails before the ring runs
		// (it leaves by itself once it has run).
		defer p.members.Leave()
	}
	if err != nil {
		return err
	}
	if err := mgr.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// startTracing starts exporting traces when s says where to (nil: off).
func startTracing(ctx context.Context, s tracing.Settings, log logrus.FieldLogger) (*tracing.Tracer, error) {
	res := tracing.Resource{Version: buildinfo.Version, Pod: os.Getenv("POD_NAME"), Namespace: os.Getenv("POD_NAMESPACE")}
	tr, err := tracing.New(ctx, s, res, log)
	if err != nil || tr == nil {
		return nil, err
	}
	log.WithFields(logrus.Fields{"to": s.Where(), "sampler": s.SamplerName, "service": s.ServiceName}).Info("tracing on")
	if s.Warning != "" {
		log.Warn("tracing: " + s.Warning)
	}
	return tr, nil
}

// stopTracing sends the spans still pending, for at most 5 s.
func stopTracing(tr *tracing.Tracer, log logrus.FieldLogger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.WithError(err).Warn("tracing: the last spans could not be sent")
	}
}

// newClients makes the clients of the cluster the flags name; it sends
// no request.
func newClients(f Flags) (*rest.Config, *kube.Clients, error) {
	cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.Kube.Kubeconfig, Context: f.Kube.Context, Server: f.Kube.Server, QPS: f.QPS, Burst: f.Burst, Unlimited: f.QPS <= 0})
	if err != nil {
		return nil, nil, err
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, clients, nil
}

// versionTimeout bounds the wait for the API server's /version at start.
const versionTimeout = 10 * time.Second

// serverVersion logs the API server's release that version waits for, and
// warns when it is older than the oldest the project tests on
// (docs/compatibility.md). An API server that does not answer yet is no
// reason to stop: the watches wait for it.
func serverVersion(version func() (kube.Version, error), host string, log logrus.FieldLogger) {
	log = log.WithField("server", host)
	v, err := version()
	if err != nil {
		log.WithError(err).Warn("connected to the cluster; its API server did not say its version")
		return
	}
	log = log.WithField("serverVersion", v.String())
	if v.Before(kube.OldestTested) {
		log.Warnf("the API server runs Kubernetes %s, older than %s, the oldest this release is tested on; see docs/compatibility.md", v, kube.OldestTested)
		return
	}
	log.Info("connected to the cluster")
}

// check refuses flags that do not go together or are out of range,
// naming the flags and saying what to use.
func (f Flags) check() error {
	if f.HookTimeout <= 0 {
		return errors.New("--hook-timeout must be positive")
	}
	if f.WatchIdle != 0 && f.WatchIdle < time.Second {
		return fmt.Errorf("--watch-idle-timeout=%s: use 0 (never) or at least 1s; the API server sends a bookmark about every minute, so a few minutes is usual", f.WatchIdle)
	}
	if err := metrics.CheckPrefix(f.MetricsPrefix); err != nil {
		return fmt.Errorf("%s: %w", f.setting("metrics-prefix"), err)
	}
	if f.ShellMetricsPrefix != "" {
		if err := metrics.CheckShellOperatorPrefix(f.MetricsPrefix, f.ShellMetricsPrefix); err != nil {
			return f.metricsPrefixesError(err)
		}
	}
	if f.HookMetricsMaxSeriesPerHook < 0 || f.HookMetricsMaxSeries < 0 {
		return fmt.Errorf("--hook-metrics-max-series-per-hook=%d, --hook-metrics-max-series=%d: use 0 (no cap) or more (the defaults are %d and %d)",
			f.HookMetricsMaxSeriesPerHook, f.HookMetricsMaxSeries, metrics.DefaultMaxSeriesPerHook, metrics.DefaultMaxSeries)
	}
	if f.MaxParallel < 1 {
		return fmt.Errorf("--max-parallel-hooks=%d: use 1 or more (the default is 4 per CPU)", f.MaxParallel)
	}
	if f.ListenMaxConns < 1 {
		return fmt.Errorf("--listen-max-connections=%d: use 1 or more (the default is 128)", f.ListenMaxConns)
	}
	if f.BatchWindow.Fixed < 0 || f.BatchWindow.Fixed > time.Minute {
		return fmt.Errorf("--batch-window=%s: use auto, or a duration from 0 (none) to 1m", f.BatchWindow.Fixed)
	}
	if f.BatchFill.Fixed < 0 {
		return fmt.Errorf("--batch-fill=%d: use auto (the default), or 0 (the window alone decides) or more", f.BatchFill.Fixed)
	}
	if err := f.Reload.check(); err != nil {
		return err
	}
	if err := hook.CheckDisabled(f.DisabledHooks); err != nil {
		return err
	}
	if f.Shard.Enabled && f.DryRun != "" {
		return errors.New("--sharding with --dry-run: a dry run writes nothing, Leases included; run it without --sharding")
	}
	if f.Leader.Enabled && f.DryRun != "" {
		return errors.New("--leader-elect with --dry-run: a dry run writes nothing, a Lease included; run it without --leader-elect")
	}
	if f.DryRun != "" && f.DryRun != "client" && f.DryRun != "server" {
		return fmt.Errorf("--dry-run=%s: use client or server", f.DryRun)
	}
	if f.Shard.Enabled {
		if err := f.Shard.check(); err != nil {
			return err
		}
	}
	if f.Leader.Standby && !f.elected() {
		return errors.New("--leader-elect-standby without --leader-elect or --sharding: a standby only replica follows a Lease; add one of them, or drop --leader-elect-standby")
	}
	if f.elected() {
		return f.Leader.check()
	}
	return nil
}

// setting names the setting of flag as the user gave it: its flag, or
// shell-operator's, or a variable.
func (f Flags) setting(flag string) string {
	if f.givenAs != nil {
		if as := f.givenAs(flag); as != "" {
			return as
		}
	}
	return "--" + flag
}

// flagName finds the flags an error names.
var flagName = regexp.MustCompile(`--([a-z0-9]+(?:-[a-z0-9]+)*)`)

// givenNames adds to err, for each of start's flags it names that the user
// gave under another name (a variable, or shell-operator's flag or
// variable), the name the user gave, so that the error names the setting
// as the Deployment has it.
func (f Flags) givenNames(err error) error {
	if err == nil || f.givenAs == nil {
		return err
	}
	var notes []string
	seen := map[string]bool{}
	for _, m := range flagName.FindAllStringSubmatch(err.Error(), -1) {
		name := m[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if as := f.givenAs(name); as != "" && as != "--"+name && !strings.Contains(err.Error(), as) {
			notes = append(notes, fmt.Sprintf("--%s is given as %s", name, as))
		}
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(notes, "; "))
}

// metricsPrefixesError is err, about the two metrics prefixes, with the
// settings the user gave for them and what to change.
func (f Flags) metricsPrefixesError(err error) error {
	own := fmt.Sprintf("%s=%q", f.setting("metrics-prefix"), f.MetricsPrefix)
	if f.givenAs != nil && f.givenAs("metrics-prefix") == "" {
		own = fmt.Sprintf("--metrics-prefix's default %q", f.MetricsPrefix)
	}
	return fmt.Errorf("%s=%q with %s: %w; give the two different prefixes (shell-operator's default is %q, ours %q)",
		f.setting("shell-operator-metrics-prefix"), f.ShellMetricsPrefix, own, err, "shell_operator_", metrics.DefaultPrefix)
}

// elected reports whether leader election runs: --leader-elect, or
// --sharding, which implies it.
func (f Flags) elected() bool { return f.Leader.Enabled || f.Shard.Enabled }

// logSkipped logs an entry of the hooks folder that is not run, and why.
func logSkipped(log logrus.FieldLogger, s hook.Skipped) {
	log.WithFields(logrus.Fields{"hook": s.Name, "reason": s.Reason}).Info("hook skipped")
}

// loadHooks loads the hooks of dir, logging each.
func loadHooks(ctx context.Context, dir string, load hook.LoadOptions, log logrus.FieldLogger) ([]*hook.Hook, error) {
	hooks, err := hook.Load(ctx, dir, load)
	if err != nil {
		return nil, fmt.Errorf("hooks in %s are not valid; nothing was started:\n%w", dir, err)
	}
	if len(hooks) == 0 {
		log.WithField("hooksDir", dir).Warn("no hooks found; the operator has nothing to do")
	}
	for _, h := range hooks {
		c := h.Config
		log.WithFields(logrus.Fields{
			"hook": h.Name, "kubernetes": len(c.Kubernetes), "schedule": len(c.Schedule), "onStartup": c.OnStartup != nil,
		}).Info("hook loaded")
	}
	return hooks, nil
}

// dryRun sets opts up to send writes to a dry-run sink and print each run.
func dryRun(opts *operator.Options, f Flags, clients *kube.Clients, w *transcript.Writer, log *logrus.Logger) {
	topts := transcript.Options{ShowSecrets: f.ShowSecrets}
	var changes func(id uint64) []transcript.Change
	if f.DryRun == "server" {
		s := &dryrun.Server{Live: clients.Dynamic, Resolver: clients.Resolver, Options: topts, Log: log}
		opts.Sink, changes = s, s.Changes
	} else {
		c := &dryrun.Client{Live: clients.Dynamic, Resolver: clients.Resolver, Options: topts, Log: log}
		opts.Sink, changes = c, c.Changes
	}
	var mu sync.Mutex
	opts.Report = func(r executor.Report) {
		run := transcript.New(r, changes(r.ID), topts)
		mu.Lock()
		defer mu.Unlock()
		if err := w.Write(run); err != nil {
			log.WithError(err).Error("printing the run")
		}
	}
}
