package executor

import (
	"slices"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Unsynchronized names the kubernetes bindings of h whose snapshots a
// context with common's group and includeSnapshotsFrom carries and that
// have not listed yet (see watch.Held): such a context must not run, as
// it would show them empty (the operator skips such a schedule tick).
func (e *Executor) Unsynchronized(h *hook.Hook, common hook.Common) []string {
	var out []string
	names := append(groupMembers(h, common.Group), common.IncludeSnapshotsFrom...)
	for _, name := range names {
		b := e.Objects.Binding(h.Name, name)
		if b != nil && b.Phase() < watch.Held && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// notListed names the kubernetes bindings of hookName that a run of
// contexts would read and that have not listed (see watch.Held): those
// whose snapshots the contexts carry, and, on a retry (which reads them
// again, see present), the bindings of its Synchronization contexts. The
// checks made when a context is queued do not cover a binding that a
// reload restarted while the run waited (a changed binding; a kept binding
// whose includeSnapshotsFrom names it goes on delivering events): the run
// would see its snapshot empty or partial. Each is counted in
// binding_monitor_missing_total, the metric shell-operator counts an
// empty snapshot of a binding without a running monitor in. A binding the
// hook no longer has is not named: its snapshot is empty, as it is gone.
func (e *Executor) notListed(hookName string, contexts []binding.Context, retry bool) []string {
	var out []string
	check := func(name string) {
		if slices.Contains(out, name) {
			return
		}
		if b := e.Objects.Binding(hookName, name); b != nil && b.Phase() < watch.Held {
			out = append(out, name)
		}
	}
	for _, c := range contexts {
		for _, name := range c.SnapshotsFrom {
			check(name)
		}
		if retry && c.Type == binding.TypeSynchronization {
			check(c.Binding)
		}
	}
	for _, name := range out {
		e.Metrics.BindingNotListed(hookName, name)
	}
	return out
}
