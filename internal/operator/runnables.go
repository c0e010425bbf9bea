package operator

import (
	"context"
	"errors"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// Runnables returns the operator as a manager runs it, for its Always and
// its Leading group; a single replica runs them under a manager without an
// elector. Hooks start in the contract's order: onStartup hooks first (by
// their order, then path), then the kubernetes bindings, whose
// Synchronization runs complete (for bindings with waitForSynchronization)
// before schedules start.
//
// always is what every replica runs: the queues, the liveness loop, the
// finalizers and, with Options.Sharding, the sharded hooks on this
// replica's share. When it stops, running hooks finish within the grace
// period, and the hooks' temp dirs are removed.
//
// leading runs the other hooks (every hook without sharding); it must
// start after always has. When it stops, no new work is taken and running
// hooks, sharded ones included, finish within the grace period, or stop at
// once when its context's cause is manager.ErrLeaseLost.
//
// Each says it has started (manager.StartNotifier) once its hooks have.
func (o *Operator) Runnables() (always, leading manager.StartNotifier) {
	return &alwaysRunnable{o: o, started: make(chan struct{})}, &leadingRunnable{o: o, started: make(chan struct{})}
}

// alwaysRunnable is the operator's Always runnable (see Runnables).
type alwaysRunnable struct {
	o       *Operator
	started chan struct{}
}

// Started implements manager.StartNotifier: it is closed once the queues
// run and, with sharding, the sharded hooks have started.
func (r *alwaysRunnable) Started() <-chan struct{} { return r.started }

// Start implements manager.Runnable.
func (r *alwaysRunnable) Start(ctx context.Context) error {
	o := r.o
	go o.tick(ctx)
	go o.reportHeld(ctx)
	if o.events != nil {
		defer o.events.Stop()
	}
	defer func() {
		o.queues.Stop(o.opts.ShutdownGrace) // at once when the leader's hooks stopped them
		if err := o.exec.Runner.Close(); err != nil {
			o.log.WithError(err).Warn("removing the hooks' temp dirs")
		}
	}()
	defer o.requeues.stop()
	if o.finalizers != nil {
		o.finalizers.Run(ctx, 2)
	}
	if err := o.begin(ctx, false); err != nil {
		return err
	}
	if o.opts.Sharding != nil {
		o.log.Info("sharded hooks started; the other hooks start when this replica leads")
	}
	close(r.started)
	<-ctx.Done()
	return nil
}

// leadingRunnable is the operator's Leading runnable (see Runnables).
type leadingRunnable struct {
	o       *Operator
	started chan struct{}
}

// Started implements manager.StartNotifier: it is closed once the hooks
// that run on the leader have started.
func (r *leadingRunnable) Started() <-chan struct{} { return r.started }

// Start implements manager.Runnable.
func (r *leadingRunnable) Start(ctx context.Context) error {
	o := r.o
	if o.opts.Sharding != nil {
		o.log.Info("leading: starting the hooks that run on the leader only")
	}
	if err := o.begin(ctx, true); err != nil {
		return err
	}
	if ctx.Err() == nil {
		o.log.Info("all bindings started; running")
	}
	close(r.started)
	<-ctx.Done()
	grace := o.opts.ShutdownGrace
	if errors.Is(context.Cause(ctx), manager.ErrLeaseLost) {
		grace = 0 // another replica may lead within the lease duration
	}
	o.log.Info("stopping: no new work is taken; waiting for running hooks")
	o.queues.Stop(grace)
	return nil
}

// begin lets hooks run from now on: the Always runnable's (lead false),
// or the Leading one's too (see liveLocked). It starts those of the
// current set that run now and did not before; a reload starts the hooks
// it adds that run.
func (o *Operator) begin(ctx context.Context, lead bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := o.current()
	before := make([]bool, len(cur))
	for i, h := range cur {
		before[i] = o.liveLocked(h)
	}
	if lead {
		o.leadCtx = ctx
	} else {
		o.runCtx = ctx
	}
	var hooks []*hook.Hook
	for i, h := range cur {
		if !before[i] && o.liveLocked(h) {
			hooks = append(hooks, h)
		}
	}
	if !lead && o.opts.Sharding == nil {
		return nil // every hook is the Leading runnable's
	}
	return o.startHooks(ctx, hooks, hooks)
}

// liveLocked reports whether h runs now: the Always runnable runs and h
// is sharded (with sharding), or the Leading runnable runs too.
func (o *Operator) liveLocked(h *hook.Hook) bool {
	if o.runCtx == nil {
		return false
	}
	return o.leadCtx != nil || (o.opts.Sharding != nil && h.Config.Settings.Sharded)
}

// stoppingLocked reports whether either runnable stops.
func (o *Operator) stoppingLocked() bool {
	return (o.runCtx != nil && o.runCtx.Err() != nil) || (o.leadCtx != nil && o.leadCtx.Err() != nil)
}

// followRing has the sharded bindings hold this replica's share of the
// ring, now and after each change of the ring.
func (o *Operator) followRing(sh *Sharding) {
	id := sh.Members.Identity()
	r := sh.Members.Ring()
	o.watcher.Shard(sh.By, r.Owns(id), sh.selector(r, id))
	o.opts.Metrics.Ring(id, r.Members(), r.Share)
	sh.Members.OnChange(func(r *shard.Ring) {
		o.opts.Metrics.Ring(id, r.Members(), r.Share)
		o.watcher.Reshard(r.Owns(id), sh.selector(r, id))
	})
}

// standby reports whether leader election runs and another replica leads.
func (o *Operator) standby() bool { return o.opts.Leading != nil && !o.opts.Leading() }
