package watch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hook-operator/hook-operator/internal/shard"
)

// shards keeps sharded bindings to the objects this replica owns: those
// whose shard key (uid, or namespace) hashes into its share of the ring.
// Where the API server filters lists and watches by shardSelector
// (KEP-5866), the informers ask it for this replica's share only, so that
// they hold only that; the same test runs on our side in every case.
type shards struct {
	by       string
	test     atomic.Pointer[func(hash uint64) bool]
	selector atomic.Pointer[string]

	mu sync.Mutex
	// served says, by resource, whether the API server filters by
	// shardSelector (asked once per resource).
	served map[string]bool
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

// current returns this replica's share now; nil for an unsharded binding.
func (s *shards) current() func(hash uint64) bool {
	if s == nil {
		return nil
	}
	if f := s.test.Load(); f != nil {
		return *f
	}
	return nil
}

// Shard makes the bindings of hooks with settings.sharded hold only the
// objects whose shard key (by: shard.ByUID or shard.ByNamespace) hashes to
// a value owns accepts. selector is the same share as a shardSelector
// (see shard.Ring.Selector), asked of API servers that filter by it; ""
// never asks. Call it before Start.
func (w *Watcher) Shard(by string, owns func(hash uint64) bool, selector string) {
	s := &shards{by: by, served: map[string]bool{}}
	s.test.Store(&owns)
	s.selector.Store(&selector)
	w.shards = s
	for _, b := range w.all() {
		if b.Hook.Config.Settings.Sharded {
			b.shard = s
		}
	}
}

// Reshard changes which objects this replica owns. Each sharded binding
// that has delivered its Synchronization delivers another with the objects
// of its new share, once its informers hold them (new informers, asking
// for the new share, where the API server filters by shard); events from
// then on are of the new share only.
func (w *Watcher) Reshard(owns func(hash uint64) bool, selector string) {
	if w.shards == nil {
		return
	}
	w.shards.test.Store(&owns)
	w.shards.selector.Store(&selector)
	for _, b := range w.all() {
		if b.shard == nil {
			continue
		}
		if b.served() && w.serverShards(b) {
			w.reshardSources(b)
			continue
		}
		b.reshard()
	}
}

// shardSelector is the shardSelector of b's informers: this replica's
// share where the API server filters by it, else "".
func (w *Watcher) shardSelector(b *Binding) string {
	if b.shard == nil || !w.serverShards(b) {
		return ""
	}
	return *b.shard.selector.Load()
}

// serverShards reports whether the API server filters b's resource by
// shardSelector: a list of one object that asks for every shard says so
// in metadata.shardInfo. The answer is kept per resource; a failed probe
// is not kept (asked again next time) and counts as no.
func (w *Watcher) serverShards(b *Binding) bool {
	s := b.shard
	if *s.selector.Load() == "" {
		return false // not to be asked
	}
	res := b.res.GVR.String()
	s.mu.Lock()
	served, known := s.served[res]
	s.mu.Unlock()
	if known {
		return served
	}
	if w.clients == nil || w.clients.Dynamic == nil {
		return false
	}
	all := shard.NewRing([]string{"all"}).Selector(shard.Field(s.by), "all")
	ctx, cancel := context.WithTimeout(w.context(), 10*time.Second)
	defer cancel()
	ri := w.clients.Dynamic.Resource(b.res.GVR)
	var list interface {
		UnstructuredContent() map[string]any
	}
	var err error
	if ns := w.probeNamespace(b); ns != "" {
		list, err = ri.Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: all})
	} else {
		list, err = ri.List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: all})
	}
	if err != nil {
		b.log.WithError(err).Warn("sharding: cannot ask whether the API server filters by shard; filtering on this side for now")
		return false
	}
	meta, _ := list.UnstructuredContent()["metadata"].(map[string]any)
	_, served = meta["shardInfo"]
	s.mu.Lock()
	s.served[res] = served
	s.mu.Unlock()
	if served {
		b.log.WithField("resource", res).Info("sharding: the API server filters by shard (ShardedListAndWatch); this replica lists and watches its own share only")
	} else {
		b.log.WithField("resource", res).Info("sharding: the API server does not filter by shard; this replica lists and watches every object and keeps its share")
	}
	return served
}

// probeNamespace is a namespace b watches, for a probe that RBAC limited
// to namespaces allows; "" when b watches every namespace.
func (w *Watcher) probeNamespace(b *Binding) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ns := range b.sources {
		if ns != "" {
			return ns
		}
	}
	if sel := b.cfg.Namespace; sel != nil && len(sel.Names) > 0 && b.res.Namespaced {
		return sel.Names[0]
	}
	return ""
}

func (w *Watcher) context() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		return context.Background()
	}
	return w.ctx
}

// reshardSources moves b to informers that ask for the new share, and
// lets go of the old ones. The new sources' objects are not events: they
// come in b's Synchronization of the new share, once every source has
// listed.
func (w *Watcher) reshardSources(b *Binding) {
	ctx := w.context()
	b.mu.Lock()
	namespaces := make([]string, 0, len(b.sources))
	for ns := range b.sources {
		namespaces = append(namespaces, ns)
	}
	b.mu.Unlock()
	type swap struct {
		ns  string
		inf *informer
	}
	var swaps []swap
	for _, ns := range namespaces {
		swaps = append(swaps, swap{ns, w.informerFor(b, w.keyFor(b, ns))})
	}
	var old, unused []*informer
	b.mu.Lock()
	for _, s := range swaps {
		src := b.sources[s.ns]
		if src == nil { // the namespace left meanwhile
			unused = append(unused, s.inf)
			continue
		}
		old = append(old, src.inf.(*informer))
		b.sources[s.ns] = &source{inf: s.inf, slot: s.inf.attach(b)}
	}
	b.mu.Unlock()
	var syncs []cache.InformerSynced
	for _, s := range swaps {
		if err := s.inf.start(ctx); err != nil {
			b.log.WithError(err).Error("sharding: cannot watch the new share")
		}
		syncs = append(syncs, s.inf.listed)
	}
	for _, inf := range append(old, unused...) {
		w.release(inf)
	}
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), syncs...) {
			b.reshard()
		}
	}()
}

// release drops one source's use of inf, stopping it when no source uses
// it any more.
func (w *Watcher) release(inf *informer) {
	w.mu.Lock()
	inf.refs--
	stop := inf.refs == 0
	if stop && w.informers[inf.key] == inf {
		delete(w.informers, inf.key)
	}
	w.mu.Unlock()
	if stop {
		inf.stop()
	}
}
