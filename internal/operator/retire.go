package operator

import (
	"slices"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// retiring are the hooks that a reload in progress removes, from before
// it takes o.mu until the new hook set replaces them. Start-up holds o.mu
// while it waits for onStartup and Synchronization runs, which may be
// runs of those very hooks failing and retried without end: so a reload
// first ends their runs without o.mu, and while it waits for o.mu nothing
// of theirs runs or starts again (their tasks are dropped when they come
// up, their bindings and schedules are not started, and start-up does
// not wait for them).
type retiring struct {
	mu      sync.Mutex
	names   []string
	changed changeNotice
}

// set makes names the retiring hooks.
func (r *retiring) set(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names = names
	r.changed.notify()
}

// has reports whether the hook named name is retiring.
func (r *retiring) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.names, name)
}

// changes returns a channel closed at the next change of the set.
func (r *retiring) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed.wait()
}

// retire ends, before the reload takes o.mu, the runs of the hooks of the
// running set that next no longer has: their running runs are stopped as
// on a timeout, their pending runs and failed runs waiting for their
// retry are dropped, and none starts until the reload has replaced the
// set (o.retiring). It returns the function that ends their retirement,
// for once the set no longer has them.
func (o *Operator) retire(next []*hook.Hook) func() {
	var names []string
	for _, h := range o.current() {
		if !slices.ContainsFunc(next, func(n *hook.Hook) bool { return n.Name == h.Name }) {
			names = append(names, h.Name)
		}
	}
	if len(names) == 0 {
		return func() {}
	}
	o.retiring.set(names)
	for _, name := range names {
		dropped := o.queues.DropHook(name)
		cancelled := o.live.cancel(name)
		if dropped+cancelled > 0 {
			o.log.WithFields(logrus.Fields{"hook": name, "running": cancelled, "pending": dropped}).
				Info("the hook is removed by a reload: its running run is stopped, and its pending runs and retries are dropped")
		}
	}
	return func() { o.retiring.set(nil) }
}
