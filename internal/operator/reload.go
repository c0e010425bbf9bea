package operator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// ReloadResult says what a reload changed: hooks by name, and the
// kubernetes bindings ("hook/binding") it started anew.
type ReloadResult struct {
	Added, Removed, Changed []string
	// Restarted are the kubernetes bindings that start anew, with a
	// Synchronization: those of added hooks, and the new or changed ones
	// of changed hooks.
	Restarted []string
	// Kept are the kubernetes bindings of changed hooks that keep running
	// as they were, without a new Synchronization.
	Kept []string
	// Webhooks is set when admission or conversion bindings changed: the
	// webhook server then registers, updates or removes their
	// configurations (see WebhooksChanged).
	Webhooks bool
}

// Unchanged reports whether the reload changed no hook's configuration.
func (r ReloadResult) Unchanged() bool {
	return len(r.Added)+len(r.Removed)+len(r.Changed) == 0
}

// ErrStopping is returned by Reload once Run's context has ended.
var ErrStopping = errors.New("the operator is stopping; the reload is not applied")

// Reload makes hooks, a valid load of the hooks folder, the operator's hook
// set, changing only what changed:
//   - the bindings, schedules and pending runs of hooks that are gone stop;
//   - hooks that are new start as at start-up: onStartup, then their
//     kubernetes bindings with their Synchronization, then schedules;
//   - of a hook whose configuration changed, the kubernetes bindings that
//     are new or changed start anew (with a Synchronization), those gone
//     stop, and those unchanged keep running without a new Synchronization
//     (all start anew when settings.sharded changed); its schedules start
//     again; its onStartup does not run (the hook is not starting);
//   - unchanged hooks keep running untouched;
//   - the resident processes of hooks that are gone stop, and those of
//     changed hooks are replaced (at once when idle, else when their run
//     ends).
//
// Runs that are queued for hooks or bindings that are gone are dropped,
// retries held after a failure included, and the running run of a hook
// that is gone is stopped as on a timeout; queued runs of a changed hook
// run the reloaded hook, and its running run's deadline moves to what its
// timeout gives now. A hook's script is read at
// each run, so a changed script with an unchanged configuration needs no
// reload. Before the operator runs, or before this replica leads (for the
// hooks that run on the leader only), the new set just replaces the old
// for hooks not started yet.
//
// A reload that removes a hook ends its runs before it waits for
// anything: start-up, which a reload waits for, may itself wait for a run
// of that hook that fails without end (see retire).
//
// A reload whose changed kubernetes bindings (same hook, same binding name)
// name a kind that its group/version does not serve, while the cluster serves
// that group/version, is not applied: the kind is most likely misspelled, and
// the bindings running now keep running. Its error is a hook.ConfigErrors
// naming each binding with a did-you-mean. A new binding with such a kind, and
// a kind whose group/version is not served at all (its CRD not installed yet),
// are no error: the binding waits for it (missingKinds).
//
// Reload returns once the hooks it started have delivered the
// Synchronization runs start-up waits for (waitForSynchronization).
func (o *Operator) Reload(hooks []*hook.Hook) (ReloadResult, error) {
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	if o.kinds != nil {
		if errs := missingKinds(o.current(), hooks, o.kinds); len(errs) > 0 {
			return ReloadResult{}, errs
		}
	}
	defer o.retire(hooks)()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stoppingLocked() {
		return ReloadResult{}, ErrStopping
	}
	p := planReload(o.current(), hooks, o.liveLocked)
	if p.result.Unchanged() {
		return p.result, nil
	}
	byHook := map[string][]*watch.Binding{}
	for _, b := range o.watcher.Bindings() {
		byHook[b.Hook.Name] = append(byHook[b.Hook.Name], b)
	}
	var stop []*watch.Binding
	for _, h := range p.removed {
		stop = append(stop, byHook[h.Name]...)
		o.stopSchedulesLocked(h.Name)
	}
	for _, c := range p.changed {
		for _, b := range byHook[c.prev.Name] {
			if !slices.Contains(c.keep, b.Name()) {
				stop = append(stop, b)
			}
		}
		o.stopSchedulesLocked(c.prev.Name)
	}
	o.watcher.Remove(stop)
	o.setHooks(p.hooks)
	if p.result.Webhooks {
		o.webhooksChange()
	}
	for _, h := range p.removed {
		o.stopRuns(h.Name)
		o.exec.Runner.RecycleResident(h.Name, "")
	}
	for _, c := range p.changed {
		o.retimeRuns(c.next)
		if c.prev.Config.Settings.Resident {
			o.exec.Runner.RecycleResident(c.prev.Name, "reload")
		}
	}

	var start, startup []*hook.Hook
	for _, h := range p.added {
		o.watcher.Add(h, kubernetesBindings(h, nil))
		if o.liveLocked(h) {
			start = append(start, h)
			if h.Config.OnStartup != nil {
				startup = append(startup, h)
			}
		}
	}
	for _, c := range p.changed {
		o.watcher.Add(c.next, kubernetesBindings(c.next, c.keep))
		if o.liveLocked(c.next) {
			start = append(start, c.next)
		}
	}
	o.logReload(p.result)
	if len(start) == 0 {
		return p.result, nil
	}
	return p.result, o.startHooks(o.runCtx, start, executor.StartupOrder(startup))
}

// stopRuns stops the runs of the hook named name, which a reload
// removed: its running run is cancelled as on a timeout, and its pending
// runs and retries are dropped at once, so that its queues move on.
func (o *Operator) stopRuns(name string) {
	dropped := o.queues.DropHook(name)
	cancelled := o.live.cancel(name)
	if dropped+cancelled > 0 {
		o.log.WithFields(logrus.Fields{"hook": name, "running": cancelled, "pending": dropped}).
			Info("the hook was removed by a reload: its running run is stopped and its pending runs are dropped")
	}
}

// retimeRuns moves the deadline of the running runs of h, which a reload
// changed, to what its timeout gives now, counted from each run's start
// (a run already past it is timed out now). Its pending runs run the
// reloaded hook, and so get its timeout anyway.
func (o *Operator) retimeRuns(h *hook.Hook) {
	timeout := o.exec.Runner.Timeout(h)
	if n := o.live.retime(h.Name, timeout); n > 0 {
		o.log.WithFields(logrus.Fields{"hook": h.Name, "running": n, "timeout": timeout.String()}).
			Info("the reload reaches the hook's running run: its deadline is now its start plus the timeout")
	}
}

// logReload logs what a reload changed.
func (o *Operator) logReload(r ReloadResult) {
	log := o.log.WithFields(logrus.Fields{"added": r.Added, "removed": r.Removed, "changed": r.Changed})
	if len(r.Changed) > 0 {
		log = log.WithFields(logrus.Fields{"restarted": r.Restarted, "kept": r.Kept})
	}
	log.WithField("webhooks", r.Webhooks).Info("hooks reloaded")
}

// stopSchedulesLocked stops the schedules of the hook named name.
func (o *Operator) stopSchedulesLocked(name string) {
	if stop := o.schedules[name]; stop != nil {
		stop()
		delete(o.schedules, name)
	}
}

// kubernetesBindings returns h's kubernetes bindings not named in keep.
func kubernetesBindings(h *hook.Hook, keep []string) []*hook.KubernetesBinding {
	var out []*hook.KubernetesBinding
	for i := range h.Config.Kubernetes {
		if k := &h.Config.Kubernetes[i]; !slices.Contains(keep, k.Name) {
			out = append(out, k)
		}
	}
	return out
}

// reloadPlan is what Reload changes.
type reloadPlan struct {
	// hooks is the new set, sorted by name: the running *hook.Hook of each
	// unchanged hook, the new one of each added or changed hook.
	hooks          []*hook.Hook
	added, removed []*hook.Hook
	changed        []hookChange
	result         ReloadResult
}

// hookChange is one hook whose configuration changed.
type hookChange struct {
	prev, next *hook.Hook
	// keep names the kubernetes bindings that keep running.
	keep []string
}

// planReload compares the running hooks with next. A hook that live says
// is not running yet keeps none of its bindings: they all start with it.
func planReload(prev, next []*hook.Hook, live func(*hook.Hook) bool) reloadPlan {
	var p reloadPlan
	old := map[string]*hook.Hook{}
	for _, h := range prev {
		old[h.Name] = h
	}
	seen := map[string]bool{}
	for _, h := range next {
		seen[h.Name] = true
		was := old[h.Name]
		switch {
		case was == nil:
			p.added = append(p.added, h)
			p.result.Added = append(p.result.Added, h.Name)
			for _, k := range h.Config.Kubernetes {
				p.result.Restarted = append(p.result.Restarted, h.Name+"/"+k.Name)
			}
			p.hooks = append(p.hooks, h)
			p.result.Webhooks = p.result.Webhooks || hasWebhooks(h)
		case was.Path == h.Path && sameJSON(was.Config, h.Config):
			p.hooks = append(p.hooks, was)
		default:
			c := hookChange{prev: was, next: h}
			if live(was) && was.Config.Settings.Sharded == h.Config.Settings.Sharded {
				for _, k := range h.Config.Kubernetes {
					if i := slices.IndexFunc(was.Config.Kubernetes, func(w hook.KubernetesBinding) bool { return w.Name == k.Name }); i >= 0 && sameJSON(was.Config.Kubernetes[i], k) {
						c.keep = append(c.keep, k.Name)
					}
				}
			}
			for _, k := range h.Config.Kubernetes {
				if name := h.Name + "/" + k.Name; slices.Contains(c.keep, k.Name) {
					p.result.Kept = append(p.result.Kept, name)
				} else {
					p.result.Restarted = append(p.result.Restarted, name)
				}
			}
			p.changed = append(p.changed, c)
			p.result.Changed = append(p.result.Changed, h.Name)
			p.hooks = append(p.hooks, h)
			p.result.Webhooks = p.result.Webhooks || !sameWebhooks(was, h)
		}
	}
	for _, h := range prev {
		if !seen[h.Name] {
			p.removed = append(p.removed, h)
			p.result.Removed = append(p.result.Removed, h.Name)
			p.result.Webhooks = p.result.Webhooks || hasWebhooks(h)
		}
	}
	slices.SortFunc(p.hooks, func(a, b *hook.Hook) int { return cmp.Compare(a.Name, b.Name) })
	return p
}

// sameJSON reports whether a and b encode to the same JSON: configurations
// compare by what they say (a compiled jqFilter is not encoded; its source
// is).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func hasWebhooks(h *hook.Hook) bool {
	c := h.Config
	return len(c.Validating)+len(c.Mutating)+len(c.Conversion) > 0
}

func sameWebhooks(a, b *hook.Hook) bool {
	return sameJSON(a.Config.Validating, b.Config.Validating) &&
		sameJSON(a.Config.Mutating, b.Config.Mutating) &&
		sameJSON(a.Config.Conversion, b.Config.Conversion)
}

// retarget returns the task to run for t, queued before a reload that
// changed or removed its hook: t as it is when its hook is unchanged; a
// copy that runs the reloaded hook, with the contexts of bindings the hook
// still has; nil when nothing of it is left.
func (o *Operator) retarget(t *queue.Task) *queue.Task {
	h := o.hook(t.Hook.Name)
	if h == t.Hook {
		return t
	}
	log := o.log.WithField("hook", t.Hook.Name)
	if o.retiring.has(t.Hook.Name) {
		log.WithField("contexts", len(t.Contexts)).Info("the hook is being removed by a reload; its pending run is dropped")
		return nil
	}
	if h == nil {
		log.WithField("contexts", len(t.Contexts)).Info("the hook was removed by a reload; its pending run is dropped")
		return nil
	}
	kept := make([]binding.Context, 0, len(t.Contexts))
	for _, c := range t.Contexts {
		if hasBinding(h, c) {
			kept = append(kept, c)
		} else {
			log.WithField("binding", c.Binding).Info("the binding was removed by a reload; its pending context is dropped")
		}
	}
	if len(kept) == 0 {
		return nil
	}
	r := *t
	r.Hook, r.Contexts = h, kept
	return &r
}

// hasBinding reports whether h has the binding context c is about.
func hasBinding(h *hook.Hook, c binding.Context) bool {
	cfg := h.Config
	switch {
	case c.Binding == binding.OnStartup && c.Type == "":
		return cfg.OnStartup != nil
	case c.Type == binding.TypeSchedule:
		return slices.ContainsFunc(cfg.Schedule, func(s hook.ScheduleBinding) bool { return s.Name == c.Binding })
	default:
		return slices.ContainsFunc(cfg.Kubernetes, func(k hook.KubernetesBinding) bool { return k.Name == c.Binding })
	}
}

// KeptAfterFailedReload says what runs after a reload that was not
// applied: the configurations loaded before, with the files as they are
// now. Hooks run their file from the hooks folder at each run (no copy is
// kept; docs/design/running-hooks.md, "A rejected reload keeps the
// configuration, not the files", says why), so an edited script's new body
// runs.
const KeptAfterFailedReload = "every hook keeps the configuration loaded before (bindings, schedules, settings), " +
	"and each run starts the hook's file as it is on disk now, so an edited hook runs its new body with its old configuration"

// ReloadReason is the reason of the Event about a reload that failed.
const ReloadReason = "HooksReloadFailed"

// ReloadFailed reports a reload that was not applied (err says why: every
// invalid configuration) as a Warning Event on the operator's Pod, when it
// runs in one and writes Events.
func (o *Operator) ReloadFailed(err error) {
	o.podEvent(ReloadReason, "the hooks folder changed and no configuration was reloaded: "+KeptAfterFailedReload+". "+withoutHookOutput(err))
}

// hookOutputMarker is how a configuration error of the hook package
// introduces the stderr of a hook's --config, up to the error's end.
const hookOutputMarker = "; its stderr ends with:"

// withoutHookOutput renders err with the stderr of hooks' --config left
// out (the operator's log has it): Events are read by more people than
// the log.
func withoutHookOutput(err error) string {
	var errs hook.ConfigErrors
	if !errors.As(err, &errs) {
		s, _, _ := strings.Cut(err.Error(), hookOutputMarker)
		return s
	}
	out := make(hook.ConfigErrors, len(errs))
	for i, e := range errs {
		c := *e
		if r, _, cut := strings.Cut(c.Reason, hookOutputMarker); cut {
			c.Reason = r + "; its stderr is in the operator's log"
		}
		out[i] = &c
	}
	return out.Error()
}
