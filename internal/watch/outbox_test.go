package watch

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

const groupBindings = `
configVersion: v1
kubernetes:
- name: alone
  apiVersion: v1
  kind: Service
- name: first
  apiVersion: v1
  kind: ConfigMap
  group: g
- name: second
  apiVersion: v1
  kind: Secret
  group: g
`

// outboxEnv is an outbox over the bindings of one hook configuration,
// driven directly: the tests choose when each binding lists.
func outboxEnv(t *testing.T, config string) (*outbox, *recordingSink, map[string]*Binding) {
	t.Helper()
	cfg, err := hook.ParseConfig("h1", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	h := &hook.Hook{Name: "h1", Config: cfg}
	sink := &recordingSink{}
	out := newOutbox(sink)
	byName := map[string]*Binding{}
	var all []*Binding
	for i := range cfg.Kubernetes {
		b := newBinding(h, &h.Config.Kubernetes[i], out, discardLog())
		byName[b.Name()] = b
		all = append(all, b)
	}
	out.register(all)
	return out, sink, byName
}

func synchronizeEmpty(o *outbox, b *Binding) {
	o.synchronization(b, nil)
	o.flush()
}

func addEvent(o *outbox, b *Binding, name string) {
	o.event(b, hook.Added, binding.Object{Namespace: "ns", Name: name})
	o.flush()
}

// A group member's Synchronization, and its events after it, wait until
// the other members have listed; a binding outside the group (and before
// it in the configuration) does not.
func TestOutboxHoldsGroupUntilMembersList(t *testing.T) {
	o, sink, b := outboxEnv(t, groupBindings)
	for _, n := range []string{"first", "second", "alone"} {
		o.setPhase(b[n], Listing)
	}
	synchronizeEmpty(o, b["first"])
	addEvent(o, b["first"], "early")
	synchronizeEmpty(o, b["alone"])
	if got := sink.take(); fmt.Sprint(got) != "[h1/alone: Synchronization []]" {
		t.Errorf("before the second member listed the sink was told %q", got)
	}
	if p := b["first"].Phase(); p != Held {
		t.Errorf("first member's phase: %s, want held", p)
	}
	synchronizeEmpty(o, b["second"])
	want := []string{"h1/first: Synchronization []", "h1/first: Added ns/early", "h1/second: Synchronization []"}
	if got := sink.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the second member listed the sink was told\n%q\nwant\n%q", got, want)
	}
	for _, n := range []string{"first", "second", "alone"} {
		if p := b[n].Phase(); p != Synced {
			t.Errorf("%s: phase %s, want synced", n, p)
		}
	}
}

// A hook's Synchronizations come in the order of its configuration,
// whichever binding lists first, as in shell-operator; a binding whose
// kind is not served holds nothing; another hook's bindings are not held.
func TestOutboxSynchronizationsInConfigurationOrder(t *testing.T) {
	o, sink, b := outboxEnv(t, `
configVersion: v1
kubernetes:
- {name: a, kind: ConfigMap}
- {name: unserved, kind: Thing}
- {name: b, kind: Secret}
- {name: c, kind: Service}
`)
	cfg, err := hook.ParseConfig("h2", []byte("configVersion: v1\nkubernetes:\n- {name: other, kind: Pod}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h2 := &hook.Hook{Name: "h2", Config: cfg}
	other := newBinding(h2, &h2.Config.Kubernetes[0], o, discardLog())
	o.register([]*Binding{other})
	for _, n := range []string{"a", "b", "c"} {
		o.setPhase(b[n], Listing)
	}
	o.setPhase(b["unserved"], Unserved)
	o.setPhase(other, Listing)

	synchronizeEmpty(o, b["c"])
	addEvent(o, b["c"], "early")
	synchronizeEmpty(o, other)
	if got := sink.take(); fmt.Sprint(got) != "[h2/other: Synchronization []]" {
		t.Errorf("with a and b still listing the sink was told %q, want only the other hook's Synchronization", got)
	}
	synchronizeEmpty(o, b["b"])
	if got := sink.take(); len(got) != 0 {
		t.Errorf("with a still listing the sink was told %q", got)
	}
	synchronizeEmpty(o, b["a"])
	want := []string{"h1/a: Synchronization []", "h1/b: Synchronization []", "h1/c: Synchronization []", "h1/c: Added ns/early"}
	if got := sink.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("once a listed the sink was told\n%q\nwant\n%q", got, want)
	}
}

// A dependency whose kind is not served holds what carries its snapshot
// until it is served and has listed: an empty snapshot would tell the hook
// that its objects are gone. HeldBy names it.
func TestOutboxUnservedDependencyHolds(t *testing.T) {
	o, sink, b := outboxEnv(t, `
configVersion: v1
kubernetes:
- name: main
  apiVersion: v1
  kind: ConfigMap
  includeSnapshotsFrom: [extra]
- name: extra
  apiVersion: example.com/v1
  kind: NotInstalled
- name: other
  apiVersion: v1
  kind: Secret
`)
	o.setPhase(b["main"], Listing)
	o.setPhase(b["other"], Listing)
	synchronizeEmpty(o, b["main"])
	if got := sink.take(); len(got) != 0 {
		t.Fatalf("delivered before the dependency was known: %q", got)
	}
	changed := o.changes()
	o.setPhase(b["extra"], Unserved)
	select {
	case <-changed:
	default:
		t.Error("the phase change was not published")
	}
	synchronizeEmpty(o, b["other"])
	addEvent(o, b["main"], "x")
	if got := sink.take(); fmt.Sprint(got) != "[h1/other: Synchronization []]" {
		t.Errorf("with the dependency unserved the sink was told %q; want only the binding that does not carry its snapshot", got)
	}
	if names, unserved := b["main"].HeldBy(); fmt.Sprint(names) != "[extra]" || unserved != "extra" {
		t.Errorf("HeldBy: %q, unserved %q", names, unserved)
	}
	o.setPhase(b["extra"], Listing)
	synchronizeEmpty(o, b["extra"])
	want := []string{"h1/main: Synchronization []", "h1/main: Added ns/x", "h1/extra: Synchronization []"}
	if got := sink.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("once the dependency listed the sink was told\n%q\nwant\n%q", got, want)
	}
	if names, unserved := b["main"].HeldBy(); names != nil || unserved != "" {
		t.Errorf("HeldBy once released: %q, %q", names, unserved)
	}
}

// A periodic Synchronization of a synced binding follows its events in
// order, and EnsureFinalizer requests do not wait behind a held binding.
func TestOutboxResyncAndFinalizerRequests(t *testing.T) {
	o, sink, b := outboxEnv(t, groupBindings)
	o.setPhase(b["alone"], Unserved)
	o.setPhase(b["first"], Listing)
	o.setPhase(b["second"], Listing)
	synchronizeEmpty(o, b["first"])
	o.ensureFinalizer(b["first"], "ns", "x")
	o.flush()
	if got := sink.take(); fmt.Sprint(got) != "[h1/first: EnsureFinalizer ns/x]" {
		t.Errorf("a held binding's finalizer request: %q", got)
	}
	synchronizeEmpty(o, b["second"])
	sink.take()
	addEvent(o, b["first"], "a")
	synchronizeEmpty(o, b["first"])
	addEvent(o, b["first"], "b")
	want := "[h1/first: Added ns/a h1/first: Synchronization [] h1/first: Added ns/b]"
	if got := sink.take(); fmt.Sprint(got) != want {
		t.Errorf("got %q, want %s", got, want)
	}
}

// Bindings notified from many goroutines at once: each binding's
// deliveries reach the Sink in the order they were made, no two Sink calls
// overlap, and none is lost.
func TestOutboxConcurrentProducersKeepOrder(t *testing.T) {
	const producers, events = 8, 500
	var config strings.Builder
	config.WriteString("configVersion: v1\nkubernetes:\n")
	for p := range producers {
		fmt.Fprintf(&config, "- name: b%d\n  apiVersion: v1\n  kind: ConfigMap\n", p)
	}
	o, sink, b := outboxEnv(t, config.String())
	for _, x := range b {
		o.setPhase(x, Listing)
		synchronizeEmpty(o, x)
	}
	sink.take()
	var wg sync.WaitGroup
	for p := range producers {
		x := b[fmt.Sprintf("b%d", p)]
		wg.Go(func() {
			for i := range events {
				x.mu.Lock() // as notify adds under the binding's lock
				o.event(x, hook.Added, binding.Object{Namespace: "ns", Name: strconv.Itoa(i)})
				x.mu.Unlock()
				o.flush()
			}
		})
	}
	wg.Wait()
	o.flush()
	if sink.overlap {
		t.Error("Sink calls overlapped")
	}
	next := map[string]int{}
	for _, line := range sink.take() {
		name, rest, _ := strings.Cut(line, ": Added ns/")
		i, err := strconv.Atoi(rest)
		if err != nil {
			t.Fatalf("unexpected line %q", line)
		}
		if i != next[name] {
			t.Fatalf("%s: got event %d, want %d", name, i, next[name])
		}
		next[name]++
	}
	for p := range producers {
		if n := next[fmt.Sprintf("h1/b%d", p)]; n != events {
			t.Errorf("b%d: %d events delivered, want %d", p, n, events)
		}
	}
}

// Memory synchronizes bindings one by one, so a group's first member waits
// for the last; their Synchronizations still come in binding order.
func TestMemoryGroupOrder(t *testing.T) {
	e := newFixtureEnv(t, groupBindings)
	e.mem.Synchronize()
	e.expect("h1/alone: Synchronization []", "h1/first: Synchronization []", "h1/second: Synchronization []")
}

// A binding removed by a reload delivers nothing more: its held
// Synchronization and events are dropped, later calls about it are
// ignored, and a group member that waited only for it is released.
func TestOutboxUnregister(t *testing.T) {
	o, sink, b := outboxEnv(t, groupBindings)
	for _, n := range []string{"first", "second", "alone"} {
		o.setPhase(b[n], Listing)
	}
	synchronizeEmpty(o, b["alone"])
	synchronizeEmpty(o, b["first"])
	addEvent(o, b["first"], "held")
	sink.take()
	changed := o.changes()
	o.unregister([]*Binding{b["second"]})
	select {
	case <-changed:
	default:
		t.Error("unregister did not tell the phase watchers")
	}
	o.flush()
	want := []string{"h1/first: Synchronization []", "h1/first: Added ns/held"}
	if got := sink.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the member it waited for was removed, the sink was told %q, want %q", got, want)
	}

	o.unregister([]*Binding{b["first"]})
	addEvent(o, b["first"], "after")
	synchronizeEmpty(o, b["first"])
	o.setPhase(b["first"], Synced)
	if got := sink.take(); len(got) != 0 {
		t.Errorf("a removed binding delivered %q", got)
	}
	if p := b["first"].Phase(); p != Resolving {
		t.Errorf("a removed binding's phase: %s, want resolving (none)", p)
	}
	addEvent(o, b["alone"], "still")
	if got := sink.take(); fmt.Sprint(got) != "[h1/alone: Added ns/still]" {
		t.Errorf("the remaining binding delivered %q", got)
	}
}

// Readiness does not wait for bindings a reload added: an operator that
// was ready stays ready while they list.
func TestSyncedIgnoresReloadedBindings(t *testing.T) {
	cfg, err := hook.ParseConfig("h1", []byte(groupBindings))
	if err != nil {
		t.Fatal(err)
	}
	h := &hook.Hook{Name: "h1", Config: cfg}
	w := New(nil, []*hook.Hook{h}, &recordingSink{}, discardLog())
	first := w.Binding("h1", "alone")
	w.out.setPhase(first, Listing)
	if ok, waiting := w.Synced(); ok || len(waiting) != 1 {
		t.Fatalf("a binding of the start listing: Synced = %v %q, want false and it named", ok, waiting)
	}
	w.out.setPhase(first, Synced)
	h2 := &hook.Hook{Name: "h2", Config: cfg}
	added := w.Add(h2, []*hook.KubernetesBinding{&h2.Config.Kubernetes[0]})
	w.out.setPhase(added[0], Listing)
	if ok, waiting := w.Synced(); !ok {
		t.Errorf("a binding added by a reload, listing: Synced = false %q, want true", waiting)
	}
	if b := w.Binding("h2", "alone"); b != added[0] {
		t.Error("the added binding is not found by name")
	}
	w.Remove(added)
	if b := w.Binding("h2", "alone"); b != nil || len(w.Bindings()) != 3 {
		t.Errorf("after Remove: %d bindings, h2's found: %v", len(w.Bindings()), b != nil)
	}
}
