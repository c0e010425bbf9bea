package watch

import (
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// ownsNames owns the ConfigMaps of namespace ns with the given names (by
// their uids, as configMap makes them).
func ownsNames(ns string, names ...string) func(uint64) bool {
	set := map[uint64]bool{}
	for _, n := range names {
		set[shard.Key(shard.ByUID, ns, "uid-"+ns+"-"+n)] = true
	}
	return func(h uint64) bool { return set[h] }
}

func shardBinding(t *testing.T, e *fixtureEnv, owns func(uint64) bool) *shards {
	t.Helper()
	s := &shards{by: shard.ByUID, served: map[string]bool{}}
	s.test.Store(&owns)
	for _, b := range e.mem.Bindings() {
		b.shard = s
	}
	return s
}

func (s *shards) set(owns func(uint64) bool) { s.test.Store(&owns) }

// A sharded binding holds only this replica's objects: its Synchronization,
// its events and its snapshot; a new share brings a Synchronization of it.
func TestShardedBindingHoldsItsShare(t *testing.T) {
	e := newFixtureEnv(t, `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap"}]}`)
	s := shardBinding(t, e, ownsNames("ns", "a", "c"))
	for _, n := range []string{"a", "b"} {
		e.store.put(cmGVR, configMap("ns", n, "1", nil))
	}
	e.mem.Synchronize()
	e.expect("h1/cms: Synchronization [ns/a]")
	e.apply(cmGVR, hook.Added, configMap("ns", "c", "2", nil))
	e.apply(cmGVR, hook.Added, configMap("ns", "d", "3", nil))
	e.apply(cmGVR, hook.Modified, configMap("ns", "b", "4", map[string]any{"k": "v"}))
	e.expect("h1/cms: Added ns/c")
	b := e.binding("h1", "cms")
	if got := len(b.Snapshot()); got != 2 || b.Count() != 2 {
		t.Errorf("snapshot of %d objects, count %d; want a and c", got, b.Count())
	}
	s.set(ownsNames("ns", "b", "d"))
	b.reshard()
	e.expect("h1/cms: Synchronization [ns/b ns/d]")
	e.apply(cmGVR, hook.Modified, configMap("ns", "a", "5", map[string]any{"k": "v"}))
	e.apply(cmGVR, hook.Modified, configMap("ns", "d", "6", map[string]any{"k": "v"}))
	e.expect("h1/cms: Modified ns/d")
}

// A binding that does not run its hook on Synchronization gets the objects
// that came with a new share as Added events, so that its new owner handles
// objects made while their old owner was gone; those it kept, or lost,
// bring none.
func TestReshardWithoutSynchronizationRunsAddsTheNewObjects(t *testing.T) {
	e := newFixtureEnv(t, `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false}]}`)
	s := shardBinding(t, e, ownsNames("ns", "a", "b"))
	for _, n := range []string{"a", "b", "c", "d"} {
		e.store.put(cmGVR, configMap("ns", n, "1", nil))
	}
	e.mem.Synchronize()
	e.expect("h1/cms: Synchronization [ns/a ns/b]") // the operator does not run it
	s.set(ownsNames("ns", "b", "c", "d"))
	e.binding("h1", "cms").reshard()
	e.expect("h1/cms: Added ns/c", "h1/cms: Added ns/d")
	// Before the first Synchronization a new share brings nothing: the
	// Synchronization will hold it.
	e2 := newFixtureEnv(t, `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap"}]}`)
	s2 := shardBinding(t, e2, ownsNames("ns", "a"))
	e2.store.put(cmGVR, configMap("ns", "a", "1", nil))
	e2.store.put(cmGVR, configMap("ns", "b", "1", nil))
	s2.set(ownsNames("ns", "b"))
	e2.binding("h1", "cms").reshard()
	e2.expect()
	e2.mem.Synchronize()
	e2.expect("h1/cms: Synchronization [ns/b]")
}
