package executor

import (
	"sort"
	"strings"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// StartupOrder returns the hooks with onStartup in the order they run:
// by their onStartup order, then by name.
func StartupOrder(hooks []*hook.Hook) []*hook.Hook {
	var startup []*hook.Hook
	for _, h := range hooks {
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
	return startup
}

// StartupTask is the task of h's onStartup run.
func StartupTask(h *hook.Hook) *queue.Task {
	return &queue.Task{Hook: h, Queue: hook.DefaultQueue, Contexts: []binding.Context{{Binding: binding.OnStartup}}}
}

// ScheduleContext is the context of one tick of schedule binding s.
func ScheduleContext(s *hook.ScheduleBinding) binding.Context {
	return binding.Context{Binding: s.Name, Type: binding.TypeSchedule}
}

// NewTask is the task for one context of a binding of h with settings
// common: the context shaped for the binding's group and snapshots, in the
// binding's queue, allowing failure as the binding says (never for a
// Finalize run: the object's deletion waits for it to succeed).
//
// For a hook with settings.parallelism above 1, an Event context about one
// object (Added, Modified, Deleted, Finalize, Requeue) gets the object's
// key, so that it may run beside other objects' (see package queue).
func NewTask(h *hook.Hook, common *hook.Common, c binding.Context) *queue.Task {
	c = binding.Shape(c, common.Group, groupMembers(h, common.Group), common.IncludeSnapshotsFrom)
	return &queue.Task{
		Hook:         h,
		Queue:        common.Queue,
		Contexts:     []binding.Context{c},
		AllowFailure: common.AllowFailure && c.WatchEvent != watch.Finalize,
		Key:          parallelKey(h, c),
	}
}

// parallelKey is the key of c's object for a hook with parallelism: the kind
// its binding watches (lower case, so that one kind written two ways is
// one key; kinds of the same name in two groups share keys, which only
// serializes more), the namespace and the name. It is "" for every other
// context.
func parallelKey(h *hook.Hook, c binding.Context) string {
	if h.Config.Settings.Parallelism <= 1 || c.Type != binding.TypeEvent || c.Object == nil {
		return ""
	}
	for _, k := range h.Config.Kubernetes {
		if k.Name == c.Binding {
			return strings.ToLower(k.Kind) + "/" + c.Object.Namespace + "/" + c.Object.Name
		}
	}
	return ""
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
