package watch

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// Sink receives what bindings observe. Calls come one at a time, in the
// order the bindings observed the changes: for each binding its
// Synchronization first (after those of the bindings whose snapshots its
// contexts carry, see Held), then its events. No lock of the watch is held
// during a call, so a Sink may read bindings (Snapshot, Get, Phase). A Sink
// must not block for long: it is called from the watch's delivery path.
type Sink interface {
	Synchronization(b *Binding, objects []binding.Object)
	Event(b *Binding, watchEvent string, obj binding.Object)
	// EnsureFinalizer asks that the binding's finalizer be added to an
	// object that lacks it (bindings with the finalizer option only).
	EnsureFinalizer(b *Binding, namespace, name string)
}

// Finalize is the watchEvent of an object being deleted that still holds
// its binding's finalizer (extension).
const Finalize = "Finalize"

// Binding is the live state of one kubernetes binding of one hook.
type Binding struct {
	Hook *hook.Hook
	cfg  *hook.KubernetesBinding
	res  kube.Resource
	log  logrus.FieldLogger
	// out owns the binding's Phase and takes what it has to tell the Sink.
	out *outbox
	// names filters objects client-side when nameSelector lists more than one
	// name (one name is a server-side field selector).
	names map[string]bool
	// metrics counts events received and suppressed; may be nil.
	metrics *metrics.Metrics
	// shard, set for the bindings of sharded hooks, keeps to the objects
	// this replica owns; nil holds every object.
	shard *shards

	mu      sync.Mutex
	sources map[string]*source // by namespace ("" = all namespaces)
	waiting string             // why the kind is not served, or ""
	// misspelled is set while the kind is not served although its
	// group/version is (kube.MissingKindError): likely a typo, which
	// readiness names.
	misspelled bool
	// synced is set by the binding's first Synchronization.
	synced bool
	// due is set while a Synchronization is wanted and waits for sources
	// that are still listing (a new share's, see Watcher.Reshard).
	due bool
	// resharding is set while the due Synchronization is for a new share;
	// held is the share the binding last delivered (sharded bindings).
	resharding bool
	held       func(hash uint64) bool
	// owned are the objects the binding holds whose status (or ApplySet
	// inventory) the hook writes itself, by entryKey; an object leaves when
	// it leaves the binding.
	owned map[string]struct{}
	// reloaded is set for bindings a reload added (Watcher.Add): readiness
	// does not wait for their Synchronization.
	reloaded bool
	// ctx ends, by cancel, when the binding is removed (Watcher.Remove),
	// which also sets removed: it takes no sources after that.
	ctx     context.Context
	cancel  context.CancelFunc
	removed bool
}

// feed is where a binding's entries come from: an informer on a live
// cluster, or a memFeed for replay. Both hand every change to Binding.notify,
// so the two deliver the same contexts.
type feed interface {
	// get returns the entry of one object, or nil.
	get(namespace, name string) *entry
	// list returns every entry.
	list() []*entry
}

// source is one feed of a binding, and the binding's slot in it.
type source struct {
	inf  feed
	slot int
	// live is set once the binding has emitted its Synchronization, or when
	// the source joined after it (a namespace that started matching): then
	// the source's initial objects are delivered as Added events.
	live bool
}

// Resource returns what the binding watches. It is set once, when the kind
// resolves and before the binding leaves phase Resolving or Unserved, and
// never changes after; so it is read without the lock.
func (b *Binding) Resource() kube.Resource { return b.res }

// Get returns one object of the binding as it would appear in a context,
// and whether the binding currently holds it.
func (b *Binding) Get(namespace, name string) (binding.Object, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, src := range b.sources {
		if e := src.inf.get(namespace, name); e != nil && b.matches(e) {
			return b.object(src, e), true
		}
	}
	return binding.Object{}, false
}

// Finalizing reports whether the binding holds the object, being deleted
// and still held by the binding's finalizer: its runs are Finalize runs.
func (b *Binding) Finalizing(namespace, name string) bool {
	if b.cfg.Finalizer == "" {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, src := range b.sources {
		if e := src.inf.get(namespace, name); e != nil && b.matches(e) {
			return e.deleting && e.hasFinalizer(b.cfg.Finalizer)
		}
	}
	return false
}

// Config returns the binding's configuration.
func (b *Binding) Config() *hook.KubernetesBinding { return b.cfg }

// Name returns the binding's name.
func (b *Binding) Name() string { return b.cfg.Name }

// Phase returns where the binding is on its way to delivering events.
func (b *Binding) Phase() Phase { return b.out.phaseOf(b) }

// Synced reports whether the Sink has the binding's Synchronization.
func (b *Binding) Synced() bool { return b.Phase() == Synced }

// HeldBy names the bindings of b's hook that b's Synchronization and
// events wait for while b is Held (see Held), and the binding whose kind
// is not served that holds b, directly or through them ("" when none). A
// binding held by one that is not served waits until its kind is.
func (b *Binding) HeldBy() (names []string, unserved string) {
	holders, u := b.out.heldBy(b)
	for _, h := range holders {
		names = append(names, h.cfg.Name)
	}
	if u != nil {
		unserved = u.cfg.Name
	}
	return names, unserved
}

// served reports whether the binding's kind has resolved: b.res is set.
func (b *Binding) served() bool { return b.Phase() >= Listing }

// Waiting returns why the binding is not watching yet, or "".
func (b *Binding) Waiting() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// KindMissing returns why the binding is not watching yet when its kind
// is missing from a group/version that is served (kube.MissingKindError,
// with its did-you-mean), or "": a kind whose whole group/version is not
// served (its CRD not installed yet) is no mistake to report.
func (b *Binding) KindMissing() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.misspelled {
		return ""
	}
	return b.waiting
}

func (b *Binding) object(src *source, e *entry) binding.Object {
	o := binding.Object{Namespace: e.Namespace, Name: e.Name, FilterResult: e.results[src.slot]}
	if b.cfg.KeepFullObjectsInMemory || b.cfg.Filter == nil {
		o.Raw = e.full()
	}
	return o
}

func (b *Binding) matches(e *entry) bool {
	return (b.names == nil || b.names[e.Name]) && b.shard.owns(e.shardHash)
}

// Count returns how many objects the binding holds.
func (b *Binding) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, src := range b.sources {
		for _, e := range src.inf.list() {
			if b.matches(e) {
				n++
			}
		}
	}
	return n
}

// Snapshot returns the binding's current objects, sorted by namespace and
// name.
func (b *Binding) Snapshot() []binding.Object {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

func (b *Binding) snapshotLocked() []binding.Object {
	// Sized once: grown by append, a snapshot of 100,000 objects allocated
	// five times its size, and held the old and the new copy at once.
	type listed struct {
		src     *source
		entries []*entry
	}
	lists := make([]listed, 0, len(b.sources))
	n := 0
	for _, src := range b.sources {
		lists = append(lists, listed{src, src.inf.list()})
		n += len(lists[len(lists)-1].entries)
	}
	out := make([]binding.Object, 0, n)
	for _, l := range lists {
		src := l.src
		for _, e := range l.entries {
			if b.matches(e) {
				out = append(out, b.object(src, e))
			}
		}
	}
	binding.SortObjects(out)
	return out
}

// synchronize delivers the binding's Synchronization from the current cache
// contents. Holding b.mu while reading the cache and handing the
// Synchronization to the outbox orders it against notify: a change the
// cache already holds either came in before (and was dropped, being part of
// this snapshot) or is delivered after.
func (b *Binding) synchronize() {
	b.mu.Lock()
	b.synchronizeLocked()
	b.mu.Unlock()
	b.out.flush()
}

// reshard delivers a Synchronization of the objects the binding holds
// under this replica's new share, unless its first Synchronization is yet
// to come (it will hold the new share).
func (b *Binding) reshard() {
	b.mu.Lock()
	if b.synced {
		b.due, b.resharding = true, true
	}
	b.trySynchronizeLocked()
	b.mu.Unlock()
	b.out.flush()
}

// waitListed waits until every source the binding has has listed, polling
// as client-go's WaitForCacheSync does; false when ctx ended first.
func (b *Binding) waitListed(ctx context.Context) bool {
	t := time.NewTicker(listedPoll)
	defer t.Stop()
	for {
		if b.listed() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// listedPoll is how often waitListed looks.
const listedPoll = 100 * time.Millisecond

// listed reports whether every source of the binding has listed.
func (b *Binding) listed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.listedLocked(false)
}

// listedLocked reports whether the binding's sources have listed: all of
// them, or with shares only those that ask for a share (a new share's).
func (b *Binding) listedLocked(shares bool) bool {
	for _, src := range b.sources {
		if inf, ok := src.inf.(*informer); ok && (!shares || inf.key.shardSelector != "") && !inf.listed() {
			return false
		}
	}
	return true
}

// synchronizeWhenListed delivers the binding's Synchronization now, or,
// while a source of a new share is still listing, once it has listed.
func (b *Binding) synchronizeWhenListed() {
	b.mu.Lock()
	b.due = true
	b.trySynchronizeLocked()
	b.mu.Unlock()
	b.out.flush()
}

func (b *Binding) trySynchronizeLocked() {
	if !b.due {
		return
	}
	if !b.listedLocked(true) {
		return // the new share's informers call reshard once they have listed
	}
	b.due = false
	if b.resharding && !b.cfg.ExecuteHookOnSynchronization {
		b.resharding = false
		b.enteredLocked()
		return
	}
	b.resharding = false
	b.synchronizeLocked()
}

// enteredLocked delivers, for a binding that does not run its hook on
// Synchronization, the objects that came with a new share as Added events
// (Finalize for those being deleted), so that the new owner handles them
// once: the objects that left the share leave without events.
func (b *Binding) enteredLocked() {
	held := b.held
	for _, src := range b.sources {
		src.live = true
		for _, e := range src.inf.list() {
			if !b.matches(e) || (held != nil && held(e.shardHash)) {
				continue
			}
			if b.cfg.Finalizer != "" && b.finalizerState(src, nil, e) {
				continue
			}
			if b.cfg.OnEvent(hook.Added) {
				b.out.event(b, hook.Added, b.object(src, e))
			}
		}
	}
	b.held = b.shard.current()
}

func (b *Binding) synchronizeLocked() {
	b.synced = true
	b.held = b.shard.current()
	objs := b.snapshotLocked()
	for _, src := range b.sources {
		src.live = true
	}
	b.out.synchronization(b, objs)
	if b.cfg.Finalizer != "" {
		// Objects deleted while nobody was watching are finalized now; the
		// rest get the finalizer if they lack it.
		for _, src := range b.sources {
			for _, e := range src.inf.list() {
				if b.matches(e) {
					b.finalizerState(src, nil, e)
				}
			}
		}
	}
}

// finalizerState handles the finalizer option for one object: an object
// being deleted that holds the finalizer is delivered as a Finalize event
// (once per deletion; retries come from the queue), and a live object that
// lacks it gets it. It reports whether the notification was consumed.
func (b *Binding) finalizerState(src *source, old, e *entry) bool {
	f := b.cfg.Finalizer
	switch {
	case e.deleting && e.hasFinalizer(f):
		if old == nil || !old.deleting || !old.hasFinalizer(f) {
			b.out.event(b, Finalize, b.object(src, e))
		}
		return true
	case e.deleting:
		return false
	case !e.hasFinalizer(f):
		b.out.ensureFinalizer(b, e.Namespace, e.Name)
	}
	return false
}

// notify handles one watch notification from f, the binding's source for
// namespace ns, and hands what it makes of it to the Sink.
func (b *Binding) notify(f feed, ns string, slot int, event string, old, e *entry) {
	var start time.Time
	timed := b.metrics.TimesWatchEvents() // shell-operator's kube_event_duration_seconds
	if timed {
		start = time.Now()
	}
	b.mu.Lock()
	b.notifyLocked(f, ns, slot, event, old, e)
	b.mu.Unlock()
	b.out.flush()
	if timed {
		b.metrics.EventHandled(b.Hook.Name, b.cfg.Name, b.cfg.Queue, time.Since(start))
	}
}

func (b *Binding) notifyLocked(f feed, ns string, slot int, event string, old, e *entry) {
	src := b.sources[ns]
	if src == nil || src.inf != f || src.slot != slot {
		return // a source the binding has let go of
	}
	if event == hook.Deleted {
		delete(b.owned, entryKey(e.Namespace, e.Name))
	}
	if !src.live {
		return // covered by the coming Synchronization
	}
	// Initial objects of a live source are new to the binding: Added.
	if !b.matches(e) {
		return
	}
	b.metrics.EventReceived(b.Hook.Name, b.cfg.Name, event)
	if b.cfg.Finalizer != "" && event != hook.Deleted && b.finalizerState(src, old, e) {
		return
	}
	if !b.cfg.OnEvent(event) {
		return
	}
	if event == hook.Modified && old != nil {
		if b.unchanged(slot, old, e) {
			b.metrics.EventSuppressed(b.Hook.Name, b.cfg.Name, "jqFilter")
			return
		}
		if b.ownStatusChange(old, e) {
			b.metrics.EventSuppressed(b.Hook.Name, b.cfg.Name, "ownStatus")
			return
		}
	}
	b.out.event(b, event, b.object(src, e))
}

// statusWritten records that the hook writes the status of an object the
// binding holds, so that the status-only modification it causes does not
// run the hook again. Objects the binding does not hold are not recorded:
// their modifications never reach it.
func (b *Binding) statusWritten(namespace, name string) {
	if b.cfg.ExecuteHookOnOwnStatusChange || b.cfg.Filter != nil {
		return // ownStatusChange never asks
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, src := range b.sources {
		if e := src.inf.get(namespace, name); e != nil && b.matches(e) {
			if b.owned == nil {
				b.owned = map[string]struct{}{}
			}
			b.owned[entryKey(namespace, name)] = struct{}{}
			return
		}
	}
}

// forgetNamespaceLocked forgets the owned objects of namespace ns, whose objects
// left the binding without events.
func (b *Binding) forgetNamespaceLocked(ns string) {
	prefix := entryKey(ns, "")
	for k := range b.owned {
		if strings.HasPrefix(k, prefix) {
			delete(b.owned, k)
		}
	}
}

// ownStatusChange reports whether a modification only changed the status
// of an object whose status this hook writes, which must not run the hook
// again (unless the binding asks): that is how a hook writing status avoids
// running in a loop. Bindings with a jqFilter decide through their filter.
func (b *Binding) ownStatusChange(old, e *entry) bool {
	if b.cfg.ExecuteHookOnOwnStatusChange || b.cfg.Filter != nil || old.full() == nil || e.full() == nil {
		return false
	}
	if _, ok := b.owned[entryKey(e.Namespace, e.Name)]; !ok {
		return false
	}
	return statusOnly(old.full(), e.full())
}

// unchanged reports whether a modification is invisible to the binding: its
// filter result is the same, or (without a filter) the object is the same
// version, as on periodic informer resyncs.
func (b *Binding) unchanged(slot int, old, e *entry) bool {
	if b.cfg.Filter != nil {
		return bytes.Equal(old.results[slot], e.results[slot])
	}
	return old.ResourceVersion == e.ResourceVersion
}

func newBinding(h *hook.Hook, cfg *hook.KubernetesBinding, out *outbox, log logrus.FieldLogger) *Binding {
	b := &Binding{
		Hook:    h,
		cfg:     cfg,
		out:     out,
		sources: map[string]*source{},
		log:     log.WithFields(logrus.Fields{"hook": h.Name, "binding": cfg.Name}),
	}
	if len(cfg.NameSelector) > 1 {
		b.names = map[string]bool{}
		for _, n := range cfg.NameSelector {
			b.names[n] = true
		}
	}
	return b
}
