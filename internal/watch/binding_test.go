package watch

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// cmBinding is a hook's one binding, "cms", to ConfigMaps.
const cmBinding = `
configVersion: v1
kubernetes:
- name: cms
  apiVersion: v1
  kind: ConfigMap
`

// cmBindingWith is cmBinding with options, each a line of the binding's
// YAML.
func cmBindingWith(options ...string) string {
	config := cmBinding
	for _, o := range options {
		config += "  " + o + "\n"
	}
	return config
}

// A binding's Synchronization comes first, then its events in the order of
// the changes; initial objects are part of the Synchronization.
func TestNotifyOrder(t *testing.T) {
	e := newFixtureEnv(t, cmBinding)
	e.store.put(cmGVR, configMap("ns", "b", "1", nil))
	e.store.put(cmGVR, configMap("ns", "a", "1", nil))
	e.mem.Synchronize()
	e.expect("h1/cms: Synchronization [ns/a ns/b]")
	if p := e.binding("h1", "cms").Phase(); p != Synced {
		t.Errorf("phase after Synchronization: %s", p)
	}

	e.apply(cmGVR, hook.Added, configMap("ns", "c", "2", nil))
	e.apply(cmGVR, hook.Modified, configMap("ns", "a", "3", map[string]any{"k": "v"}))
	e.apply(cmGVR, hook.Deleted, configMap("ns", "b", "4", nil))
	e.apply(cmGVR, hook.Modified, configMap("ns", "c", "5", nil))
	e.expect("h1/cms: Added ns/c", "h1/cms: Modified ns/a", "h1/cms: Deleted ns/b", "h1/cms: Modified ns/c")
	if got := fmt.Sprint(names(e.binding("h1", "cms"))); got != "[ns/a ns/c]" {
		t.Errorf("snapshot after the changes: %s", got)
	}
	if e.sink.overlap {
		t.Error("Sink calls overlapped")
	}
}

// A Modified event that leaves the jqFilter result as it was does not run
// the hook; without a jqFilter, the same resourceVersion (a resync) does
// not either. executeHookOnEvent filters the event types.
func TestModifiedUnchangedFilterResult(t *testing.T) {
	e := newFixtureEnv(t, `
configVersion: v1
kubernetes:
- name: filtered
  apiVersion: v1
  kind: ConfigMap
  jqFilter: .data.x
- name: plain
  apiVersion: v1
  kind: ConfigMap
- name: only-deleted
  apiVersion: v1
  kind: ConfigMap
  executeHookOnEvent: [Deleted]
`)
	e.mem.Synchronize()
	e.sink.take()

	e.apply(cmGVR, hook.Added, configMap("ns", "a", "1", map[string]any{"x": "1", "y": "1"}))
	e.expect(`h1/filtered: Added ns/a "1"`, "h1/plain: Added ns/a")
	e.apply(cmGVR, hook.Modified, configMap("ns", "a", "2", map[string]any{"x": "1", "y": "2"}))
	e.expect("h1/plain: Modified ns/a")
	e.apply(cmGVR, hook.Modified, configMap("ns", "a", "2", map[string]any{"x": "1", "y": "2"}))
	e.expect()
	e.apply(cmGVR, hook.Modified, configMap("ns", "a", "3", map[string]any{"x": "2", "y": "2"}))
	e.expect(`h1/filtered: Modified ns/a "2"`, "h1/plain: Modified ns/a")
	e.apply(cmGVR, hook.Deleted, configMap("ns", "a", "4", map[string]any{"x": "2", "y": "2"}))
	e.expect(`h1/filtered: Deleted ns/a "2"`, "h1/plain: Deleted ns/a", "h1/only-deleted: Deleted ns/a")
}

// A hook's own status write does not run it again; other changes do. The
// binding forgets the object once it is deleted.
func TestOwnStatusChange(t *testing.T) {
	e := newFixtureEnv(t, cmBinding)
	withStatus := func(rv, phase string, data map[string]any) *unstructured.Unstructured {
		u := configMap("ns", "a", rv, data)
		u.Object["status"] = map[string]any{"phase": phase}
		return u
	}
	e.mem.Synchronize()
	e.apply(cmGVR, hook.Added, withStatus("1", "", nil))
	e.sink.take()
	b := e.binding("h1", "cms")

	e.mem.StatusWritten("h1", cmGVR.String(), "ns", "a")
	e.mem.StatusWritten("h1", cmGVR.String(), "ns", "not-held")
	e.mem.StatusWritten("other", cmGVR.String(), "ns", "a")
	if len(b.owned) != 1 {
		t.Fatalf("owned objects: %v, want only ns/a (held by the binding)", b.owned)
	}
	e.apply(cmGVR, hook.Modified, withStatus("2", "Ready", nil))
	e.expect()
	e.apply(cmGVR, hook.Modified, withStatus("3", "Ready", map[string]any{"k": "v"}))
	e.expect("h1/cms: Modified ns/a")
	e.apply(cmGVR, hook.Deleted, withStatus("3", "Ready", map[string]any{"k": "v"}))
	e.expect("h1/cms: Deleted ns/a")
	if len(b.owned) != 0 {
		t.Errorf("owned objects after the delete: %v", b.owned)
	}
}

// The finalizer option: a live object without the finalizer gets it; an
// object being deleted that holds it is delivered once as Finalize, also
// when it was deleted before the Synchronization; one that does not hold it
// is an ordinary Modified.
func TestFinalizerState(t *testing.T) {
	const f = "example.com/cleanup"
	e := newFixtureEnv(t, cmBindingWith("finalizer: "+f))
	deleting := func(name, rv string, finalizers ...any) *unstructured.Unstructured {
		u := configMap("ns", name, rv, nil)
		md := u.Object["metadata"].(map[string]any)
		md["deletionTimestamp"] = "2026-11-24T00:00:00Z"
		md["finalizers"] = finalizers
		return u
	}
	withFinalizer := func(name, rv string) *unstructured.Unstructured {
		u := configMap("ns", name, rv, nil)
		u.Object["metadata"].(map[string]any)["finalizers"] = []any{f}
		return u
	}
	e.store.put(cmGVR, configMap("ns", "new", "1", nil))
	e.store.put(cmGVR, deleting("gone", "1", f))
	e.mem.Synchronize()
	e.expect(
		"h1/cms: Synchronization [ns/gone ns/new]",
		"h1/cms: Finalize ns/gone",
		"h1/cms: EnsureFinalizer ns/new",
	)

	e.apply(cmGVR, hook.Modified, withFinalizer("new", "2"))
	e.expect("h1/cms: Modified ns/new")
	e.apply(cmGVR, hook.Modified, deleting("new", "3", f, "other.example.com/x"))
	e.expect("h1/cms: Finalize ns/new")
	e.apply(cmGVR, hook.Modified, deleting("new", "4", f))
	e.expect() // still the same deletion: retries come from the queue
	e.apply(cmGVR, hook.Modified, deleting("new", "5"))
	e.expect("h1/cms: Modified ns/new")
	e.apply(cmGVR, hook.Deleted, deleting("new", "5"))
	e.expect("h1/cms: Deleted ns/new")
}

// A binding with namespace.labelSelector takes up the objects of a
// namespace that starts matching (as Added events) and lets go of those of
// one that stops matching (without events), forgetting their status.
func TestNamespaceLabelSelector(t *testing.T) {
	e := newFixtureEnv(t, cmBindingWith("namespace: {labelSelector: {matchLabels: {team: a}}}"))
	e.store.put(nsGVR, namespace("in", map[string]any{"team": "a"}))
	e.store.put(nsGVR, namespace("out", map[string]any{"team": "b"}))
	e.store.put(cmGVR, configMap("in", "x", "1", nil))
	e.store.put(cmGVR, configMap("out", "y", "1", nil))
	e.mem.Synchronize()
	e.expect("h1/cms: Synchronization [in/x]")
	b := e.binding("h1", "cms")

	e.apply(cmGVR, hook.Added, configMap("out", "z", "2", nil))
	e.expect()
	e.apply(nsGVR, hook.Modified, namespace("out", map[string]any{"team": "a"}))
	e.expect("h1/cms: Added out/y", "h1/cms: Added out/z")

	e.mem.StatusWritten("h1", cmGVR.String(), "in", "x")
	e.apply(nsGVR, hook.Modified, namespace("in", nil))
	e.expect()
	if got := fmt.Sprint(names(b)); got != "[out/y out/z]" {
		t.Errorf("snapshot after the namespaces changed: %s", got)
	}
	if len(b.owned) != 0 {
		t.Errorf("owned objects of a namespace that left: %v", b.owned)
	}
	e.apply(cmGVR, hook.Modified, configMap("in", "x", "3", map[string]any{"k": "v"}))
	e.expect()
}

// Status ownership stays bounded: objects the hook wrote status to are
// forgotten when they are deleted, so after churning many objects the
// binding remembers only live ones.
func TestStatusOwnersForgetDeletedObjects(t *testing.T) {
	const churn, live = 10000, 100
	e := newFixtureEnv(t, cmBindingWith("executeHookOnEvent: []"))
	e.mem.Synchronize()
	b := e.binding("h1", "cms")
	peak := 0
	for i := range churn {
		cm := configMap("ns", fmt.Sprintf("cm-%05d", i), fmt.Sprint(i), nil)
		e.apply(cmGVR, hook.Added, cm)
		e.mem.StatusWritten("h1", cmGVR.String(), "ns", cm.GetName())
		peak = max(peak, len(b.owned))
		if i >= live {
			old := configMap("ns", fmt.Sprintf("cm-%05d", i-live), "0", nil)
			e.apply(cmGVR, hook.Deleted, old)
		}
	}
	if peak <= live {
		t.Fatalf("owned objects peaked at %d: the test does not exercise the map", peak)
	}
	if len(b.owned) != live || b.Count() != live {
		t.Errorf("after churning %d objects: %d owned, %d held; want %d of each", churn, len(b.owned), b.Count(), live)
	}
}

func names(b *Binding) []string {
	var out []string
	for _, o := range b.Snapshot() {
		out = append(out, entryKey(o.Namespace, o.Name))
	}
	return out
}
