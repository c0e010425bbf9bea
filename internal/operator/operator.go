// Package operator is the live operator: it wires the control loop
// together. Hooks' bindings are watched (watch) and scheduled (schedule),
// what they observe becomes binding contexts (binding) queued for their
// hooks (queue), and each task is handed to the executor (executor), which
// runs one hook process (run) and applies the operations it writes to the
// cluster (ops). What outlives one run is the operator's: start-up order,
// reloads, triggers, requeue timers, the state the debug routes and probes
// report, and the Events about failed runs (recorder).
package operator

import (
	"cmp"
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/memlimit"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/recorder"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/schedule"
	"github.com/hook-operator/hook-operator/internal/shard"
	"github.com/hook-operator/hook-operator/internal/tracing"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Options configure an operator.
type Options struct {
	// TmpDir is where per-run temp dirs are made ("" = the system's).
	TmpDir string
	// HookTimeout ends runs of hooks that set no timeout of their own.
	HookTimeout time.Duration
	// MaxHookOutput is the most read from one file a hook writes (see
	// run.Runner.MaxOutputBytes); zero means run.DefaultMaxOutputBytes.
	MaxHookOutput int64
	// Queue configures the queues: the backoff of failed runs' retries and
	// the batch window between a queue's runs.
	Queue queue.Options
	// ShutdownGrace is how long running hooks may finish after a stop signal.
	ShutdownGrace time.Duration
	// Env is the environment hooks inherit (os.Environ() in production).
	Env []string
	// Sink receives every write; nil writes to the cluster. Dry-run sets it.
	Sink executor.Sink
	// Report, when set, is told about every hook run (see executor.Executor.Report).
	Report func(executor.Report)
	// Metrics, when set, receives the operator's metrics and the hooks'.
	Metrics *metrics.Metrics
	// Events makes failed runs leave Kubernetes Events on their objects.
	Events bool
	// WatchIdleTimeout restarts, with a fresh list, a watch that delivered
	// no event and no bookmark for that long; zero: never.
	WatchIdleTimeout time.Duration
	// RestrictWrites fails runs whose operations write outside their
	// hook's declared writes (see executor.Executor.RestrictWrites).
	RestrictWrites bool
	// Pod is the operator's own Pod, when it runs in one: Events about
	// the operator itself (a reload that failed) are about it.
	Pod PodRef
	// Sharding, when set, runs the hooks with settings.sharded in the
	// Always runnable (see Runnables), their kubernetes bindings holding
	// only the objects this replica owns, and the other hooks in the
	// Leading one.
	Sharding *Sharding
	// Identity is this replica's name in leader election's Lease; empty
	// without election.
	Identity string
	// Leading reports whether this replica leads (manager.Leading); nil
	// without leader election. While it reports false and no hook is
	// sharded, the replica is a standby: readiness, liveness and debug
	// say so.
	Leading func() bool
	// Leader returns the identity of the replica seen to lead, for a
	// standby's answer to a trigger; nil or "" when unknown.
	Leader func() string
	// Tracer, when set, traces each context from where it arose (a watch
	// event, a tick, a review) to the operations applied; nil: off.
	Tracer *tracing.Tracer
}

// PodRef names a Pod; Name is empty when the operator runs in none.
type PodRef struct {
	Namespace, Name, UID string
}

// Sharding says which objects this replica owns: its share of the ring,
// followed as the ring changes.
type Sharding struct {
	// By is the shard key: shard.ByUID or shard.ByNamespace.
	By string
	// ServerSide asks API servers that filter lists and watches by shard
	// for this replica's share only.
	ServerSide bool
	// Members is the ring's membership, already joined (shard.Members):
	// the operator reads its share from it when made, and every change
	// of the ring gives each sharded binding a Synchronization of its new
	// share. Something else runs it (Members.Run).
	Members RingMembership
}

// RingMembership is the sharding ring as the operator follows it.
type RingMembership interface {
	Identity() string
	Ring() *shard.Ring
	OnChange(func(*shard.Ring))
}

// selector is id's share of r as a shardSelector, or "" when the API
// server is not to be asked for shares.
func (s *Sharding) selector(r *shard.Ring, id string) string {
	if !s.ServerSide {
		return ""
	}
	return r.Selector(shard.Field(s.By), id)
}

// Operator runs a set of hooks against a cluster.
type Operator struct {
	// hooks is the hook set, replaced whole by Reload; read it with
	// current and hook.
	hooks   atomic.Pointer[hookSet]
	opts    Options
	log     logrus.FieldLogger
	exec    *executor.Executor
	queues  *queue.Set
	watcher *watch.Watcher
	// finalizers adds and removes bindings' finalizers (extension) when
	// the operator writes to the cluster; nil with another Sink.
	finalizers *finalizer.Manager
	requeues   requeues
	// live are the queued runs in progress, which a reload reaches.
	live liveRuns
	// events records the Events about failed runs; nil unless
	// Options.Events.
	events *recorder.Recorder
	stats  runStats
	// started is set once start-up is done (see Ready); lastTick is when
	// the liveness loop last ticked (see Alive).
	started  atomic.Bool
	lastTick atomic.Int64
	// apiReady asks the API server's /readyz.
	apiReady func(ctx context.Context) error
	// health follows outages of the API server; nil when the operator
	// does not write to a cluster.
	health *kube.Health
	// startupRuns are the runs start-up waits for and that have not
	// finished: onStartup runs, and the Synchronization runs of bindings
	// with waitForSynchronization.
	startupRuns startupRuns
	// retiring are the hooks a reload in progress removes (see retire).
	retiring retiring
	// webhooksChanged is closed, and replaced, by a reload that changes
	// an admission or conversion binding (see WebhooksChanged).
	webhooksMu      sync.Mutex
	webhooksChanged chan struct{}
	// misdirected is what the webhook server last found wrong with where
	// its registrations point (WebhooksMisdirected); readiness lists it.
	misdirected atomic.Pointer[[]string]
	// booting is set while hooks start: their bindings' first
	// Synchronization runs are waited for (waitForSynchronization).
	booting atomic.Bool
	// kinds resolves the kinds of a reload's bindings (missingKinds); nil
	// without a cluster.
	kinds *kube.Resolver
	// dyn reads CRDs (their uids, for Events about failed conversions).
	dyn     dynamic.Interface
	crdUIDs uidCache

	// reloadMu makes reloads one at a time: a reload reads the hook set
	// before it takes mu (see retire).
	reloadMu sync.Mutex
	// mu is held while hooks start and while a reload applies, so that
	// the two never interleave. The fields below are guarded by it.
	mu sync.Mutex
	// runCtx is the Always runnable's context once hooks may start; nil
	// before.
	runCtx context.Context
	// leadCtx is the Leading runnable's context once the leader's hooks
	// start; nil before.
	leadCtx context.Context
	// schedules stops the running schedules of each hook, by name.
	schedules map[string]context.CancelFunc
}

// New returns an operator for hooks on the cluster of clients.
func New(hooks []*hook.Hook, clients *kube.Clients, opts Options, log logrus.FieldLogger) *Operator {
	o := &Operator{
		opts:      opts,
		log:       log,
		dyn:       clients.Dynamic,
		kinds:     clients.Resolver,
		schedules: map[string]context.CancelFunc{},
	}
	o.webhooksChanged = make(chan struct{})
	o.setHooks(hooks)
	sink := opts.Sink
	if sink == nil {
		o.finalizers = finalizer.New(clients.Dynamic, log)
		sink = &executor.ClusterSink{
			Applier: &ops.Applier{Dynamic: clients.Dynamic, Resolver: clients.Resolver, FieldManager: ops.DefaultFieldManager, Log: log,
				Cached: func(res kube.Resource, namespace, name string) (string, bool) {
					return o.watcher.Cached(res.GVR.String(), namespace, name)
				}},
			Finalizers: o.finalizers,
		}
	}
	o.watcher = watch.New(clients, hooks, o, log)
	o.exec = &executor.Executor{
		Objects:  o.watcher,
		Resolver: clients.Resolver,
		Runner:   &run.Runner{TmpDir: opts.TmpDir, Env: opts.Env, DefaultTimeout: opts.HookTimeout, MaxOutputBytes: opts.MaxHookOutput, Log: log, ReuseDirs: true, Processes: opts.Metrics},
		Sink:     sink,
		Requeue:  func(r executor.RequeueRequest) { o.requeues.schedule(r, o.fireRequeue) },
		Report:   opts.Report,
		Metrics:  opts.Metrics,
		Failed:   o.failed,
		Tracer:   opts.Tracer,
		Log:      log,

		RestrictWrites: opts.RestrictWrites,
	}
	if opts.Events {
		o.events = recorder.New(clients.Dynamic, log, opts.Metrics.KubeEvent)
	}
	if rc := clients.Unversioned; rc != nil {
		o.apiReady = kube.Readyz(rc)
	}
	if clients.Unversioned != nil && opts.Sink == nil {
		o.health = kube.NewHealth(clients.Unversioned, log)
		o.watcher.SetHealth(o.health)
	}
	o.watcher.SetIdleTimeout(opts.WatchIdleTimeout)
	if sh := opts.Sharding; sh != nil {
		o.followRing(sh)
	}
	o.queues = queue.NewSet(o.runTask, opts.Queue, log)
	if opts.Metrics != nil {
		o.queues.Metrics = opts.Metrics
		o.watcher.SetMetrics(opts.Metrics)
		opts.Metrics.QueueOldestPending(o.queues.OldestPending)
		opts.Metrics.QueueTasks(o.queues.Tasks)
	}
	return o
}

// runTask is the queues' handler. The run is registered among the live
// runs before its task meets the current hook set, so that a reload
// reaches it: a removed hook's run is cancelled (and then counts as
// done, not retried), a changed timeout moves its deadline.
func (o *Operator) runTask(ctx context.Context, t *queue.Task) error {
	ctx, end := o.live.begin(ctx, t.Hook.Name)
	defer end()
	if t = o.retarget(t); t == nil {
		return nil // its hook or bindings were removed by a reload
	}
	before, _ := o.health.State()
	err := o.exec.Execute(ctx, t)
	o.stats.record(t.Hook.Name, err)
	if err != nil && errors.Is(context.Cause(ctx), errHookRemoved) {
		o.log.WithField("hook", t.Hook.Name).WithError(err).Warn("the hook was removed by a reload while it ran; its run was stopped and is not retried")
		return nil
	}
	return o.outage(ctx, before, err)
}

// outage marks the error of a run that failed because the API server was
// away: an outage began during the run, or goes on, or err says so. The
// queue then retries the run as soon as the server answers, rather than
// after a backoff that the outage made long.
func (o *Operator) outage(ctx context.Context, before uint64, err error) error {
	if err == nil || o.health == nil {
		return err
	}
	after, down := o.health.State()
	if after != before || down || o.health.Failed(ctx, err) {
		return &queue.OutageError{Err: err, Back: o.health.Back()}
	}
	return err
}

// hookSet is the operator's hooks, sorted by name, and by name: every
// event looks its hook up (a reload may have replaced it).
type hookSet struct {
	list   []*hook.Hook
	byName map[string]*hook.Hook
	// webhooks are the set's admission and conversion bindings.
	webhooks *webhookTargets
}

// setHooks makes hooks, sorted by name, the hook set.
func (o *Operator) setHooks(hooks []*hook.Hook) {
	s := &hookSet{list: hooks, byName: make(map[string]*hook.Hook, len(hooks)), webhooks: newWebhookTargets(hooks)}
	for _, h := range hooks {
		s.byName[h.Name] = h
	}
	o.hooks.Store(s)
}

// current returns the hook set, sorted by name.
func (o *Operator) current() []*hook.Hook { return o.hooks.Load().list }

// hook returns the hook named name, or nil.
func (o *Operator) hook(name string) *hook.Hook { return o.hooks.Load().byName[name] }

// startHooks starts hooks in the contract's order: the onStartup runs of
// those in startup, then their kubernetes bindings that have not started,
// whose Synchronization runs complete (for bindings with
// waitForSynchronization) before their schedules start. It returns nil
// early when ctx ends. Call it with o.mu held.
func (o *Operator) startHooks(ctx context.Context, hooks, startup []*hook.Hook) error {
	o.booting.Store(true)
	defer o.booting.Store(false)
	hooks = slices.DeleteFunc(slices.Clone(hooks), func(h *hook.Hook) bool { return o.retiring.has(h.Name) })
	set := map[*hook.Hook]bool{}
	for _, h := range hooks {
		set[h] = true
	}
	if err := o.runStartup(ctx, startup); err != nil {
		return err
	}
	// The initial lists fill the cache the whole time they run: a lower GC
	// target until their Synchronizations have run keeps the heap near
	// what it will settle at, rather than twice that.
	defer memlimit.LowerGCWhileStarting()()
	if err := o.watcher.Start(ctx, func(h *hook.Hook) bool { return set[h] && !o.retiring.has(h.Name) }); err != nil {
		return err
	}
	if err := o.waitForSynchronization(ctx, set); err != nil {
		return nil // stopped while starting
	}
	if err := o.startSchedules(ctx, hooks); err != nil {
		return err
	}
	// The initial lists and Synchronization contexts leave much garbage
	// behind; hand it back to the system now rather than keep it as heap
	// the process never needs again (the benchmark's "RSS 5 s later").
	debug.FreeOSMemory()
	o.started.Store(true)
	return nil
}

// runStartup queues every onStartup hook in order and waits for them all;
// every 10 seconds meanwhile it logs which runs it waits for, and how
// they go (startupHolds).
func (o *Operator) runStartup(ctx context.Context, hooks []*hook.Hook) error {
	startup := executor.StartupOrder(hooks)
	var wg sync.WaitGroup
	for _, h := range startup {
		if o.retiring.has(h.Name) {
			continue
		}
		wg.Add(1)
		t := executor.StartupTask(h)
		o.traceRoot(t, t.Contexts[0])
		end := o.startupRuns.add(startupRun{hook: h.Name, binding: binding.OnStartup, queue: t.Queue})
		t.Done = func(err error) { end(err); wg.Done() }
		err := o.queues.Push(t)
		if err != nil {
			end(err)
			return err
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
			o.log.WithField("runs", o.startupHolds()).Warn("start-up waits for onStartup runs")
		}
	}
}

// waitForSynchronization returns once every binding with
// waitForSynchronization whose kind is served has completed its
// Synchronization run. Bindings waiting for their kind (CRD not installed),
// and those held by one (see watch.Held), do not hold start-up.
//
// A binding is Synced once the Sink has returned from its Synchronization,
// which queued the run and counted it in startupSyncs: so when every
// binding is Synced and the count is zero, every run is done.
func (o *Operator) waitForSynchronization(ctx context.Context, hooks map[*hook.Hook]bool) error {
	for {
		changed, finished, retired := o.watcher.Changed(), o.startupRuns.changes(), o.retiring.changes()
		var pending []string
		for _, b := range o.watcher.Bindings() {
			if p := b.Phase(); hooks[b.Hook] && b.Config().WaitForSynchronization && p != watch.Unserved && p != watch.Synced && !stalled(b) && !o.retiring.has(b.Hook.Name) {
				pending = append(pending, b.Hook.Name+"/"+b.Name())
			}
		}
		runs := o.startupRuns.list()
		if len(pending) == 0 && len(runs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-finished:
		case <-retired:
		case <-time.After(10 * time.Second):
			log := o.log.WithField("runs", o.startupHolds())
			if len(pending) > 0 {
				log = log.WithField("listing", strings.Join(pending, ","))
			}
			log.Warn("start-up waits for Synchronization")
		}
	}
}

// Synchronization implements watch.Sink.
func (o *Operator) Synchronization(b *watch.Binding, objects []binding.Object) {
	cfg := b.Config()
	if !cfg.ExecuteHookOnSynchronization {
		return
	}
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeSynchronization, Objects: objects}
	var done func(error)
	if cfg.WaitForSynchronization && o.booting.Load() {
		done = o.startupRuns.add(startupRun{hook: b.Hook.Name, binding: cfg.Name, queue: cmp.Or(cfg.Queue, hook.DefaultQueue)})
	}
	o.push(b.Hook, &cfg.Common, c, done)
}

// Event implements watch.Sink.
func (o *Operator) Event(b *watch.Binding, watchEvent string, obj binding.Object) {
	cfg := b.Config()
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeEvent, WatchEvent: watchEvent, Object: &obj}
	o.push(b.Hook, &cfg.Common, c, nil)
}

// EnsureFinalizer implements watch.Sink.
func (o *Operator) EnsureFinalizer(b *watch.Binding, namespace, name string) {
	o.exec.Sink.EnsureFinalizer(finalizer.Target{Resource: b.Resource().GVR, Namespace: namespace, Name: name, Finalizer: b.Config().Finalizer})
}

func (o *Operator) push(h *hook.Hook, common *hook.Common, c binding.Context, done func(error)) {
	if o.retiring.has(h.Name) {
		if done != nil {
			done(queue.ErrDropped) // a reload removes the hook: nothing to wait for
		}
		return
	}
	if cur := o.hook(h.Name); cur != nil {
		h = cur // a binding a reload kept runs the reloaded hook
	}
	t := executor.NewTask(h, common, c)
	t.Done = done
	o.traceRoot(t, c)
	if err := o.queues.Push(t); err != nil {
		if done != nil {
			done(err) // never runs: nothing to wait for
		}
		o.log.WithFields(logrus.Fields{"hook": h.Name, "binding": common.Name}).WithError(err).Debug("not queued")
	}
}

// startSchedules starts the schedule bindings of hooks, each hook's
// replacing those it had (a reload changed it). Call it with o.mu held.
func (o *Operator) startSchedules(ctx context.Context, hooks []*hook.Hook) error {
	for _, h := range hooks {
		o.stopSchedulesLocked(h.Name)
		if o.retiring.has(h.Name) {
			continue
		}
		var entries []schedule.Entry
		for i := range h.Config.Schedule {
			s := &h.Config.Schedule[i]
			entries = append(entries, schedule.Entry{
				Crontab: s.Crontab,
				Fire: func(time.Time) {
					if names := o.exec.Unsynchronized(h, s.Common); len(names) > 0 {
						o.log.WithFields(logrus.Fields{"hook": h.Name, "binding": s.Name, "waitsFor": strings.Join(names, ",")}).
							Warn("schedule tick skipped: its context carries the snapshots of bindings that have not synchronized")
						return
					}
					o.push(h, &s.Common, executor.ScheduleContext(s), nil)
				},
			})
		}
		if len(entries) == 0 {
			continue
		}
		sctx, stop := context.WithCancel(ctx)
		if err := schedule.Run(sctx, entries); err != nil {
			stop()
			return err
		}
		o.schedules[h.Name] = stop
	}
	return nil
}
