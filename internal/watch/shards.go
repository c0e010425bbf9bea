package watch

import "sync/atomic"

// shards keeps sharded bindings to the objects this replica owns: those
// whose shard key (uid, or namespace) hashes into its share of the ring.
type shards struct {
	by   string
	test atomic.Pointer[func(hash uint64) bool]
}

// owns reports whether this replica owns the object of hash h; a nil
// shards (an unsharded binding) owns every object.
func (s *shards) owns(h uint64) bool {
	if s == nil {
		return true
	}
	f := s.test.Load()
	return f != nil && (*f)(h)
}

// Shard makes the bindings of hooks with settings.sharded hold only the
// objects whose shard key (by: shard.ByUID or shard.ByNamespace) hashes to
// a value owns accepts. Call it before Start.
func (w *Watcher) Shard(by string, owns func(hash uint64) bool) {
	s := &shards{by: by}
	s.test.Store(&owns)
	w.shards = s
	for _, b := range w.bindings {
		if b.Hook.Config.Settings.Sharded {
			b.shard = s
		}
	}
}

// Reshard changes which objects this replica owns. Each sharded binding
// that has delivered its Synchronization delivers another with the objects
// of its new share; events from then on are of the new share only.
func (w *Watcher) Reshard(owns func(hash uint64) bool) {
	if w.shards == nil {
		return
	}
	w.shards.test.Store(&owns)
	for _, b := range w.bindings {
		if b.shard != nil {
			b.reshard()
		}
	}
}
