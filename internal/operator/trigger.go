package operator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// OriginTrigger is the origin of a run that `hook-operator trigger` asked
// for: the log's origin field and queue.Task.Origin.
const OriginTrigger = "trigger"

// Trigger queues a run of a hook's binding as its watch or schedule would:
// a kubernetes binding's Synchronization of the objects it holds now, or an
// Event (watchEvent Modified) of one of them, or a schedule binding's
// Schedule context. The run goes through the binding's queue behind what is
// pending there, combines and retries as any run does, and logs
// origin=trigger. A sharded hook's Event must be asked of the replica that
// owns the object.
func (o *Operator) Trigger(r debugapi.TriggerRequest) (debugapi.TriggerAnswer, error) {
	h := o.hook(r.Hook)
	if h == nil {
		var names []string
		for _, h := range o.current() {
			names = append(names, h.Name)
		}
		return debugapi.TriggerAnswer{}, fmt.Errorf("no hook %q; the hooks are: %s", r.Hook, strings.Join(names, ", "))
	}
	if o.opts.Leading != nil && !o.opts.Leading() && (o.opts.Sharding == nil || !h.Config.Settings.Sharded) {
		return debugapi.TriggerAnswer{}, &debugapi.StandbyError{Identity: o.opts.Identity, Leader: o.leader()}
	}
	name, err := triggerBinding(h, r.Binding)
	if err != nil {
		return debugapi.TriggerAnswer{}, err
	}
	for i := range h.Config.Schedule {
		if s := &h.Config.Schedule[i]; s.Name == name {
			if r.Object != "" {
				return debugapi.TriggerAnswer{}, fmt.Errorf("hook %s: binding %q is a schedule binding, which has no objects; --object needs a kubernetes binding", h.Name, name)
			}
			if err := o.pushTriggered(h, &s.Common, executor.ScheduleContext(s)); err != nil {
				return debugapi.TriggerAnswer{}, err
			}
			return debugapi.TriggerAnswer{Hook: h.Name, Binding: name, Type: string(binding.TypeSchedule), Queue: s.Queue}, nil
		}
	}
	b := o.liveBinding(h.Name, name)
	if b == nil || !b.Synced() {
		return debugapi.TriggerAnswer{}, fmt.Errorf("hook %s: binding %q has not synchronized yet (its kind may not be served, or it is still listing); see hook-operator debug hooks, and try again", h.Name, name)
	}
	cfg := b.Config()
	objects := b.Snapshot()
	if r.Object == "" {
		if err := o.pushTriggered(b.Hook, &cfg.Common, binding.Context{Binding: name, Type: binding.TypeSynchronization, Objects: objects}); err != nil {
			return debugapi.TriggerAnswer{}, err
		}
		return debugapi.TriggerAnswer{Hook: h.Name, Binding: name, Type: string(binding.TypeSynchronization), Queue: cfg.Queue, Objects: len(objects)}, nil
	}
	ns, objName, _ := strings.Cut(r.Object, "/")
	if !strings.Contains(r.Object, "/") {
		ns, objName = "", r.Object
	}
	i := slices.IndexFunc(objects, func(x binding.Object) bool { return x.Namespace == ns && x.Name == objName })
	if i < 0 {
		return debugapi.TriggerAnswer{}, fmt.Errorf("hook %s: binding %q holds no %s %q (write NAMESPACE/NAME, or NAME for a cluster-scoped kind; hook-operator debug snapshots %s lists what it holds)",
			h.Name, name, cfg.Kind, r.Object, h.Name)
	}
	obj := objects[i]
	if err := o.pushTriggered(b.Hook, &cfg.Common, binding.Context{Binding: name, Type: binding.TypeEvent, WatchEvent: "Modified", Object: &obj}); err != nil {
		return debugapi.TriggerAnswer{}, err
	}
	return debugapi.TriggerAnswer{Hook: h.Name, Binding: name, Type: string(binding.TypeEvent), Queue: cfg.Queue, Objects: 1}, nil
}

// triggerBinding resolves the binding a trigger names: name itself when the
// hook has a kubernetes or schedule binding of that name, or the hook's
// only one when name is empty.
func triggerBinding(h *hook.Hook, name string) (string, error) {
	var names []string
	for _, k := range h.Config.Kubernetes {
		if !slices.Contains(names, k.Name) {
			names = append(names, k.Name)
		}
	}
	for _, s := range h.Config.Schedule {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	switch {
	case len(names) == 0:
		return "", fmt.Errorf("hook %s has no kubernetes or schedule binding to trigger", h.Name)
	case name == "" && len(names) == 1:
		return names[0], nil
	case name == "":
		return "", fmt.Errorf("hook %s has several bindings; name one with --binding: %s", h.Name, strings.Join(names, ", "))
	case !slices.Contains(names, name):
		return "", fmt.Errorf("hook %s has no kubernetes or schedule binding %q; its bindings are: %s", h.Name, name, strings.Join(names, ", "))
	}
	return name, nil
}

// liveBinding returns the running kubernetes binding of a hook, or nil.
func (o *Operator) liveBinding(hookName, name string) *watch.Binding {
	for _, b := range o.watcher.Bindings() {
		if b.Hook.Name == hookName && b.Name() == name {
			return b
		}
	}
	return nil
}

// pushTriggered queues c as push does, marked as triggered.
func (o *Operator) pushTriggered(h *hook.Hook, common *hook.Common, c binding.Context) error {
	if cur := o.hook(h.Name); cur != nil {
		h = cur
	}
	t := executor.NewTask(h, common, c)
	t.Origin = OriginTrigger
	o.traceRoot(t, c)
	fields := logrus.Fields{"hook": h.Name, "binding": c.Binding, "type": c.Type, "origin": OriginTrigger}
	if c.Object != nil {
		fields["object"] = c.Object.Namespace + "/" + c.Object.Name
	}
	if err := o.queues.Push(t); err != nil {
		return fmt.Errorf("hook %s: binding %q: not queued: %w", h.Name, c.Binding, err)
	}
	o.opts.Metrics.Triggered(h.Name, string(c.Type))
	o.log.WithFields(fields).Info("run triggered; queued")
	return nil
}

// leader is the replica seen to lead, or "".
func (o *Operator) leader() string {
	if o.opts.Leader == nil {
		return ""
	}
	return o.opts.Leader()
}
