// Package operator wires the control loop together: hooks' bindings are
// watched (watch) and scheduled (schedule), what they observe becomes
// binding contexts (binding) queued for their hooks (queue), each run
// executes one hook process (run), and the operations it writes are
// applied to the cluster (ops).
package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/schedule"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Options configure an operator.
type Options struct {
	// TmpDir is where per-run temp dirs are made ("" = the system's).
	TmpDir string
	// HookTimeout ends runs of hooks that set no timeout of their own.
	HookTimeout time.Duration
	// Retry paces the retries of failed runs.
	Retry queue.Options
	// ShutdownGrace is how long running hooks may finish after a stop signal.
	ShutdownGrace time.Duration
	// Env is the environment hooks inherit (os.Environ() in production).
	Env []string
}

// Operator runs a set of hooks against a cluster.
type Operator struct {
	hooks   []*hook.Hook
	opts    Options
	log     logrus.FieldLogger
	runner  *run.Runner
	applier *ops.Applier
	queues  *queue.Set
	watcher *watch.Watcher
	// finalizers adds and removes bindings' finalizers (extension).
	finalizers *finalizer.Manager
	requeues   requeues
	resolver   *kube.Resolver

	mu         sync.Mutex
	syncsDone  map[*watch.Binding]bool
	syncChange chan struct{}
}

// New returns an operator for hooks on the cluster of clients.
func New(hooks []*hook.Hook, clients *kube.Clients, opts Options, log logrus.FieldLogger) *Operator {
	o := &Operator{
		hooks:      hooks,
		opts:       opts,
		log:        log,
		syncsDone:  map[*watch.Binding]bool{},
		syncChange: make(chan struct{}, 1),
	}
	o.runner = &run.Runner{TmpDir: opts.TmpDir, Env: opts.Env, DefaultTimeout: opts.HookTimeout, Log: log}
	o.applier = &ops.Applier{Dynamic: clients.Dynamic, Resolver: clients.Resolver, FieldManager: "hook-operator", Log: log}
	o.queues = queue.NewSet(o.execute, opts.Retry, log)
	o.watcher = watch.New(clients, hooks, o, log)
	o.finalizers = finalizer.New(clients.Dynamic, log)
	o.resolver = clients.Resolver
	return o
}

// Run starts the hooks in the contract's order and runs until ctx ends:
// onStartup hooks first (by their order, then path), then the kubernetes
// bindings, whose Synchronization runs complete (for bindings with
// waitForSynchronization) before schedules start. When ctx ends it takes no
// new work, lets running hooks finish within the grace period, and returns.
func (o *Operator) Run(ctx context.Context) error {
	o.warnUnserved()
	defer o.queues.Stop(o.opts.ShutdownGrace)
	defer o.requeues.stop()
	o.finalizers.Run(ctx, 2)

	if err := o.runStartup(ctx); err != nil {
		return err
	}
	if err := o.watcher.Start(ctx); err != nil {
		return err
	}
	if err := o.waitForSynchronization(ctx); err != nil {
		return nil // stopped while starting
	}
	if err := o.startSchedules(ctx); err != nil {
		return err
	}
	o.log.Info("all bindings started; running")
	<-ctx.Done()
	o.log.Info("stopping: no new work is taken; waiting for running hooks")
	return nil
}

// warnUnserved says plainly that admission and conversion bindings are
// not served yet, instead of ignoring them silently.
func (o *Operator) warnUnserved() {
	for _, h := range o.hooks {
		c := h.Config
		n := len(c.Validating) + len(c.Mutating) + len(c.Conversion)
		if n > 0 {
			o.log.WithField("hook", h.Name).Warnf("the hook has %d admission or conversion binding(s); serving webhooks is not implemented yet, so they will not run", n)
		}
	}
}

// runStartup queues every onStartup hook in order and waits for them all.
func (o *Operator) runStartup(ctx context.Context) error {
	var startup []*hook.Hook
	for _, h := range o.hooks {
		if h.Config.OnStartup != nil {
			startup = append(startup, h)
		}
	}
	sort.SliceStable(startup, func(i, j int) bool {
		a, b := *startup[i].Config.OnStartup, *startup[j].Config.OnStartup
		if a != b {
			return a < b
		}
		return startup[i].Name < startup[j].Name
	})
	var wg sync.WaitGroup
	for _, h := range startup {
		wg.Add(1)
		err := o.queues.Push(&queue.Task{
			Hook:     h,
			Queue:    hook.DefaultQueue,
			Contexts: []binding.Context{{Binding: binding.OnStartup}},
			Done:     func(error) { wg.Done() },
		})
		if err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// waitForSynchronization returns once every binding with
// waitForSynchronization whose kind is served has completed its
// Synchronization run. Bindings waiting for their kind (CRD not installed)
// do not hold start-up.
func (o *Operator) waitForSynchronization(ctx context.Context) error {
	for {
		var pending []string
		o.mu.Lock()
		for _, b := range o.watcher.Bindings() {
			if b.Config().WaitForSynchronization && b.Waiting() == "" && !o.syncsDone[b] {
				pending = append(pending, b.Hook.Name+"/"+b.Name())
			}
		}
		o.mu.Unlock()
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.syncChange:
		case <-time.After(10 * time.Second):
			o.log.WithField("bindings", strings.Join(pending, ",")).Info("waiting for Synchronization")
		}
	}
}

func (o *Operator) markSynced(b *watch.Binding) {
	o.mu.Lock()
	o.syncsDone[b] = true
	o.mu.Unlock()
	select {
	case o.syncChange <- struct{}{}:
	default:
	}
}

// groupMembers returns the names of h's kubernetes bindings in group.
func groupMembers(h *hook.Hook, group string) []string {
	if group == "" {
		return nil
	}
	var out []string
	for _, k := range h.Config.Kubernetes {
		if k.Group == group {
			out = append(out, k.Name)
		}
	}
	return out
}

// Synchronization implements watch.Sink.
func (o *Operator) Synchronization(b *watch.Binding, objects []binding.Object) {
	cfg := b.Config()
	if !cfg.ExecuteHookOnSynchronization {
		o.markSynced(b)
		return
	}
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeSynchronization, Objects: objects}
	o.push(b.Hook, &cfg.Common, c, func(error) { o.markSynced(b) })
}

// Event implements watch.Sink.
func (o *Operator) Event(b *watch.Binding, watchEvent string, obj binding.Object) {
	cfg := b.Config()
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeEvent, WatchEvent: watchEvent, Object: &obj}
	o.push(b.Hook, &cfg.Common, c, nil)
}

// EnsureFinalizer implements watch.Sink.
func (o *Operator) EnsureFinalizer(b *watch.Binding, namespace, name string) {
	o.finalizers.Ensure(finalizer.Target{Resource: b.Resource().GVR, Namespace: namespace, Name: name, Finalizer: b.Config().Finalizer})
}

func (o *Operator) push(h *hook.Hook, common *hook.Common, c binding.Context, done func(error)) {
	c = binding.Shape(c, common.Group, groupMembers(h, common.Group), common.IncludeSnapshotsFrom)
	err := o.queues.Push(&queue.Task{
		Hook:     h,
		Queue:    common.Queue,
		Contexts: []binding.Context{c},
		// A Finalize run must succeed: the object's deletion waits for it.
		AllowFailure: common.AllowFailure && c.WatchEvent != watch.Finalize,
		Done:         done,
	})
	if err != nil {
		o.log.WithFields(logrus.Fields{"hook": h.Name, "binding": common.Name}).WithError(err).Debug("not queued")
	}
}

func (o *Operator) startSchedules(ctx context.Context) error {
	var entries []schedule.Entry
	for _, h := range o.hooks {
		for i := range h.Config.Schedule {
			s := &h.Config.Schedule[i]
			entries = append(entries, schedule.Entry{
				Crontab: s.Crontab,
				Fire: func(time.Time) {
					o.push(h, &s.Common, binding.Context{Binding: s.Name, Type: binding.TypeSchedule}, nil)
				},
			})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return schedule.Run(ctx, entries)
}

// execute is the queues' handler: one run of a hook with its merged
// contexts, then the operations it wrote, validated whole and applied.
func (o *Operator) execute(ctx context.Context, t *queue.Task) error {
	contexts := binding.Combine(t.Contexts)
	binding.FillSnapshots(contexts, func(name string) []binding.Object {
		if b := o.watcher.Binding(t.Hook.Name, name); b != nil {
			return b.Snapshot()
		}
		return nil
	})
	data, err := binding.Encode(contexts)
	if err != nil {
		return fmt.Errorf("hook %s: encode binding contexts: %w", t.Hook.Name, err)
	}
	names := bindingNames(contexts)
	log := o.log.WithFields(logrus.Fields{"hook": t.Hook.Name, "binding": names, "queue": t.Queue})
	log.WithField("contexts", len(contexts)).Debug("running hook")
	res, err := o.runner.Run(ctx, run.Request{Hook: t.Hook, Contexts: data, Binding: names, Queue: t.Queue})
	if err != nil {
		return err
	}
	operations, err := ops.Parse(res.Operations)
	if err != nil {
		return fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", t.Hook.Name, err)
	}
	requeues, err := o.resolveRequeues(t.Hook, operations)
	if err != nil {
		return fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", t.Hook.Name, err)
	}
	o.noteStatusWrites(t.Hook, operations)
	if len(operations) > 0 {
		if err := o.applier.ApplyFor(ctx, t.Hook.Name, operations); err != nil {
			return fmt.Errorf("hook %s: %w", t.Hook.Name, err)
		}
	}
	if err := o.releaseFinalizers(ctx, t.Hook, contexts); err != nil {
		return fmt.Errorf("hook %s: %w", t.Hook.Name, err)
	}
	for _, r := range requeues {
		o.requeues.schedule(r, o.fireRequeue)
	}
	log.WithFields(logrus.Fields{"contexts": len(contexts), "operations": len(operations), "duration": res.Duration.Round(time.Millisecond).String()}).
		Info("hook run succeeded")
	return nil
}

// noteStatusWrites tells the watch which objects the hook writes status or
// (as ApplySet parents) inventory annotations to, before the writes happen,
// so that the events they cause do not run the hook again.
func (o *Operator) noteStatusWrites(h *hook.Hook, operations []ops.Operation) {
	for _, op := range operations {
		var apiVersion, kind, namespace, name string
		switch {
		case op.Type == ops.Status:
			apiVersion, kind, namespace, name = op.APIVersion, op.Kind, op.Namespace, op.Name
		case op.Type == ops.ApplySet && op.Parent != nil:
			p := op.Parent
			apiVersion, kind, namespace, name = p.APIVersion, p.Kind, p.Namespace, p.Name
		default:
			continue
		}
		if res, err := o.resolver.Resolve(apiVersion, kind); err == nil {
			o.watcher.StatusWritten(h.Name, res.GVR.String(), namespace, name)
		}
	}
}

// releaseFinalizers removes the finalizer of every object this successful
// run was finalizing, letting its deletion go on.
func (o *Operator) releaseFinalizers(ctx context.Context, h *hook.Hook, contexts []binding.Context) error {
	for _, c := range contexts {
		if c.WatchEvent != watch.Finalize || c.Object == nil {
			continue
		}
		b := o.watcher.Binding(h.Name, c.Binding)
		if b == nil {
			continue
		}
		t := finalizer.Target{Resource: b.Resource().GVR, Namespace: c.Object.Namespace, Name: c.Object.Name, Finalizer: b.Config().Finalizer}
		if _, err := o.finalizers.Remove(ctx, t); err != nil {
			return fmt.Errorf("remove %s: %w", t, err)
		}
		o.log.WithFields(logrus.Fields{"hook": h.Name, "object": t.String()}).Info("finalized; finalizer removed")
	}
	return nil
}

// bindingNames lists the distinct bindings of contexts, in order.
func bindingNames(contexts []binding.Context) string {
	seen := map[string]bool{}
	var out []string
	for _, c := range contexts {
		if !seen[c.Binding] {
			seen[c.Binding] = true
			out = append(out, c.Binding)
		}
	}
	return strings.Join(out, ",")
}
