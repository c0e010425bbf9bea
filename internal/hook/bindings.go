package hook

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/schedule"
)

// Default binding names, used when a binding names none.
const (
	DefaultScheduleName   = "schedule"
	DefaultKubernetesName = "kubernetes"
)

// allEvents is the default of executeHookOnEvent.
var allEvents = []string{Added, Modified, Deleted}

// common reads the fields every binding kind shares. queued is false for
// admission and conversion bindings, which answer the API server directly
// and so have no queue and no allowFailure.
func (c *checker) common(o *object, defaultName string, queued bool, refs *[]snapshotRef) Common {
	cm := Common{Name: defaultName, Queue: DefaultQueue}
	if name, ok := o.str("name"); ok && name != "" {
		cm.Name = name
	}
	if queued {
		if q, ok := o.str("queue"); ok && q != "" {
			cm.Queue = q
		}
		cm.AllowFailure = o.boolean("allowFailure", false)
	}
	cm.Group, _ = o.str("group")
	if names, ok := o.strings("includeSnapshotsFrom"); ok && len(names) > 0 {
		cm.IncludeSnapshotsFrom = names
		*refs = append(*refs, snapshotRef{path: o.at("includeSnapshotsFrom"), names: names})
	}
	return cm
}

func (c *checker) scheduleBindings(top *object, refs *[]snapshotRef) []ScheduleBinding {
	var out []ScheduleBinding
	for _, o := range top.objects("schedule") {
		b := ScheduleBinding{Common: c.common(o, DefaultScheduleName, true, refs)}
		if spec, ok := o.required("crontab", `a crontab such as "*/5 * * * *"`); ok {
			if _, err := schedule.Parse(spec); err != nil {
				c.errorf(o.at("crontab"), "%v", err)
			}
			b.Crontab = spec
		}
		o.finish()
		out = append(out, b)
	}
	return out
}

func (c *checker) kubernetesBindings(top *object, refs *[]snapshotRef) []KubernetesBinding {
	var out []KubernetesBinding
	seen := map[string]string{} // name → path of the binding that has it
	for _, o := range top.objects("kubernetes") {
		b := c.kubernetes(o, refs)
		if first, dup := seen[b.Name]; dup {
			if o.has("name") {
				c.errorf(o.at("name"), "%q is already the name of %s; give each kubernetes binding of a hook its own name (snapshots are keyed by it)", b.Name, first)
			} else {
				c.errorf(o.path, "has no name, so it gets the default %q, which %s already has; give each kubernetes binding of a hook its own name (snapshots are keyed by it)", b.Name, first)
			}
		} else {
			seen[b.Name] = o.path
		}
		out = append(out, b)
	}
	return out
}

func (c *checker) kubernetes(o *object, refs *[]snapshotRef) KubernetesBinding {
	b := KubernetesBinding{Common: c.common(o, DefaultKubernetesName, true, refs)}
	if v, ok := o.str("apiVersion"); ok && v != "" {
		if _, err := schema.ParseGroupVersion(v); err != nil {
			c.errorf(o.at("apiVersion"), "%q is not an API version; write group/version such as apps/v1, v1 for the core group, or leave it out for the preferred version", v)
		}
		b.APIVersion = v
	}
	b.Kind, _ = o.required("kind", "the kind of objects to watch, such as Pod or deployments")
	b.ExecuteHookOnEvent = c.events(o)
	b.ExecuteHookOnSynchronization = o.boolean("executeHookOnSynchronization", true)
	b.WaitForSynchronization = o.boolean("waitForSynchronization", true)
	if !b.WaitForSynchronization && b.Queue == DefaultQueue {
		c.errorf(o.at("waitForSynchronization"), "false is only allowed on a queue other than %q (the main queue must see the Synchronization first); set queue to a named queue or remove waitForSynchronization", DefaultQueue)
	}
	b.KeepFullObjectsInMemory = o.boolean("keepFullObjectsInMemory", true)
	b.NameSelector = c.nameSelector(o, "nameSelector")
	b.LabelSelector = c.labelSelector(o, "labelSelector")
	b.FieldSelector = c.fieldSelector(o, len(b.NameSelector) > 0)
	b.Namespace = c.namespace(o)
	if src, ok := o.str("jqFilter"); ok && src != "" {
		f, err := jq.Compile(src)
		if err != nil {
			c.errorf(o.at("jqFilter"), "%v; fix the program", err)
		}
		b.JQFilter, b.Filter = src, f
	}
	b.ResynchronizationPeriod, _ = o.duration("resynchronizationPeriod")
	if v, ok := o.str("finalizer"); ok && v != "" {
		c.finalizer(o, &b, v)
	}
	b.ExecuteHookOnOwnStatusChange = o.boolean("executeHookOnOwnStatusChange", false)
	b.StaleAfter = c.staleAfter(o)
	o.finish()
	return b
}

// finalizer checks the finalizer option (extension): a qualified name with
// a domain, on a binding whose contexts can say that an object is being
// finalized (Group contexts carry no watchEvent).
func (c *checker) finalizer(o *object, b *KubernetesBinding, v string) {
	switch {
	case !strings.Contains(v, "/") || len(validation.IsQualifiedName(v)) > 0:
		c.errorf(o.at("finalizer"), "%q is not a finalizer name; write a domain you own and a name, such as example.com/cleanup", v)
	case b.Group != "":
		c.errorf(o.at("finalizer"), "cannot be used with group (Group contexts do not say which object is being deleted); remove group or the finalizer")
	default:
		b.Finalizer = v
	}
}

// events reads executeHookOnEvent, or its legacy name watchEvent. The
// result is never nil: empty means the binding only feeds snapshots.
func (c *checker) events(o *object) []string {
	on, hasOn := o.strings("executeHookOnEvent")
	legacy, hasLegacy := o.strings("watchEvent")
	key, list := "executeHookOnEvent", on
	switch {
	case o.has("executeHookOnEvent") && o.has("watchEvent"):
		c.errorf(o.at("watchEvent"), "is the legacy name of executeHookOnEvent, which is set too; keep only executeHookOnEvent")
		return append([]string(nil), allEvents...)
	case hasOn:
	case hasLegacy:
		key, list = "watchEvent", legacy
	default:
		return append([]string(nil), allEvents...)
	}
	out := []string{}
	for i, e := range list {
		path := index(o.at(key), i)
		switch {
		case !c.oneOf(path, e, "an event type", allEvents...):
		case slices.Contains(out, e):
			c.errorf(path, "%q is listed twice; list each event type once", e)
		default:
			out = append(out, e)
		}
	}
	return out
}
