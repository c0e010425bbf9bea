// Package watch is the runtime's sensor: it watches the objects that hooks'
// kubernetes bindings ask for with client-go informers, applies their
// selectors and jq filters, keeps per object only what the bindings need,
// and reports each binding's Synchronization and events to a Sink, in
// order and with no lock held (see outbox). It is the one owner of each
// binding's Phase; Watcher.Changed tells when a phase changes.
package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// Watcher runs every kubernetes binding of a set of hooks.
type Watcher struct {
	clients *kube.Clients
	sink    Sink
	log     logrus.FieldLogger

	out     *outbox
	metrics *metrics.Metrics
	// streams opens the informers' watches; nil sends them through the
	// dynamic client (no REST config, as in tests with fake clients).
	streams *streams
	// shards, when set, keeps sharded bindings to this replica's objects.
	shards *shards
	// health, when set, makes lists and watches wait out an outage of the
	// API server and resume the moment it answers (see kube.Health).
	health *kube.Health
	// lists records whether the API server serves streaming lists.
	lists *watchLists
	// idle is the operator's --watch-idle-timeout: the stale threshold of
	// bindings that set no staleAfter (see SetIdleTimeout).
	idle time.Duration

	// bindings are every binding, in hook and configuration order; Add and
	// Remove replace the slice (under mu), readers load it without a lock.
	bindings atomic.Pointer[[]*Binding]

	mu        sync.Mutex
	informers map[informerKey]*informer
	ns        *namespaces
	ctx       context.Context

	// kindRetry bounds how often a binding whose kind is unknown retries.
	kindRetryMin, kindRetryMax time.Duration
}

// New returns a watcher for the kubernetes bindings of hooks, reporting to sink.
func New(clients *kube.Clients, hooks []*hook.Hook, sink Sink, log logrus.FieldLogger) *Watcher {
	w := &Watcher{
		clients:      clients,
		sink:         sink,
		out:          newOutbox(sink),
		log:          log,
		informers:    map[informerKey]*informer{},
		lists:        &watchLists{clients: clients, log: log},
		kindRetryMin: time.Second,
		kindRetryMax: 15 * time.Second,
	}
	if clients != nil {
		w.streams = newStreams(clients.Watches, clients.Unversioned, log)
	}
	var all []*Binding
	for _, h := range hooks {
		for i := range h.Config.Kubernetes {
			all = append(all, newBinding(h, &h.Config.Kubernetes[i], w.out, log))
		}
	}
	w.bindings.Store(&all)
	w.out.register(all)
	return w
}

// all returns every binding, in hook and configuration order.
func (w *Watcher) all() []*Binding { return *w.bindings.Load() }

// Add registers the kubernetes bindings cfgs of h (a hook added or changed
// by a reload), in phase Resolving: Start starts them.
func (w *Watcher) Add(h *hook.Hook, cfgs []*hook.KubernetesBinding) []*Binding {
	added := make([]*Binding, 0, len(cfgs))
	for _, cfg := range cfgs {
		b := newBinding(h, cfg, w.out, w.log)
		b.metrics, b.reloaded = w.metrics, true
		if w.shards != nil && h.Config.Settings.Sharded {
			b.shard = w.shards
		}
		added = append(added, b)
	}
	w.mu.Lock()
	next := append(slices.Clone(w.all()), added...)
	w.bindings.Store(&next)
	w.mu.Unlock()
	w.out.register(added)
	return added
}

// Remove stops bindings (of a hook removed or changed by a reload): they
// deliver nothing more, what they had yet to deliver is dropped, and their
// informers stop unless other bindings use them.
func (w *Watcher) Remove(bindings []*Binding) {
	if len(bindings) == 0 {
		return
	}
	w.mu.Lock()
	next := slices.DeleteFunc(slices.Clone(w.all()), func(b *Binding) bool { return slices.Contains(bindings, b) })
	w.bindings.Store(&next)
	w.mu.Unlock()
	w.out.unregister(bindings)
	for _, b := range bindings {
		b.mu.Lock()
		sources, cancel := b.sources, b.cancel
		b.sources, b.removed = map[string]*source{}, true
		b.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		for _, src := range sources {
			if inf, ok := src.inf.(*informer); ok {
				w.release(inf)
			}
		}
		b.log.Info("binding stopped")
	}
}

// SetHealth makes the watches wait for h during outages of the API server,
// rather than backing off. Call it before Start.
func (w *Watcher) SetHealth(h *kube.Health) { w.health = h }

// SetIdleTimeout makes a watch that delivers no event and no bookmark for
// d end, so that its informer lists again (zero: never), unless its
// bindings set a staleAfter of their own (hook.StaleAfterOf): d is also
// the stale threshold of the bindings that set none. Call it before
// Start. The API server sends a bookmark about every minute on a watch
// that asks for them, as informers' watches do.
func (w *Watcher) SetIdleTimeout(d time.Duration) { w.idle = d }

// Bindings returns every binding, in hook and configuration order.
func (w *Watcher) Bindings() []*Binding { return w.all() }

// SetMetrics makes the watcher count events and watch errors in m, and
// serve the number of objects each binding holds
// (binding_objects, after the metric prefix). Call it before Start.
func (w *Watcher) SetMetrics(m *metrics.Metrics) {
	w.metrics = m
	for _, b := range w.all() {
		b.metrics = m
	}
	m.Register(newObjectsCollector(w, m))
	m.Register(newFreshnessCollector(w, m))
}

// Binding returns the named kubernetes binding of a hook, or nil.
func (w *Watcher) Binding(hookName, name string) *Binding {
	for _, b := range w.all() {
		if b.Hook.Name == hookName && b.cfg.Name == name {
			return b
		}
	}
	return nil
}

// Start begins watching for every binding of the hooks for which only
// returns true (every binding when only is nil) and returns at once. It may
// be called again for other hooks (as sharding does for the leader's
// hooks); each binding is started once. Bindings whose kind is not served
// yet keep retrying in the background until it is (its CRD is installed)
// or ctx ends. Each binding delivers its Synchronization when its
// informers have listed.
func (w *Watcher) Start(ctx context.Context, only func(*hook.Hook) bool) error {
	began := time.Now()
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	var mine, pending []*Binding
	for _, b := range w.all() {
		if (only == nil || only(b.Hook)) && b.Phase() == Resolving {
			mine = append(mine, b)
		}
	}
	// Each binding's own goroutines (its Synchronization, resynchronization
	// and wait for its kind) end when it is removed.
	for _, b := range mine {
		bctx, cancel := context.WithCancel(ctx)
		b.mu.Lock()
		b.ctx, b.cancel = bctx, cancel
		b.mu.Unlock()
		w.metrics.BindingStarted(b.Hook.Name, b.cfg.Name)
	}
	for _, b := range mine {
		if err := w.resolve(b); err != nil {
			if !errors.Is(err, kube.ErrUnknownKind) {
				return fmt.Errorf("hook %s: binding %q: %w", b.Hook.Name, b.cfg.Name, err)
			}
			logKindNotServed(b, err)
			pending = append(pending, b)
		}
	}
	if w.ns == nil && w.needsNamespaces(mine) {
		w.ns = newNamespaces(w)
		if err := w.ns.start(ctx); err != nil {
			return err
		}
	}
	// Attach every resolved binding before starting any informer: an
	// informer's binding set is fixed once it runs.
	var ready []*Binding
	for _, b := range mine {
		if b.served() {
			w.attachInitial(b)
			ready = append(ready, b)
		}
	}
	timers := w.enableTimers(ready, began)
	for _, b := range ready {
		if err := w.run(ctx, b, timers[b.Hook.Name].listed); err != nil {
			return err
		}
	}
	for _, b := range pending {
		go w.waitForKind(ctx, b)
	}
	return nil
}

// logKindNotServed logs that b's kind is not served (err wraps
// kube.ErrUnknownKind). A kind missing from a group/version that is served
// is likely a typo, and is logged as an error with the did-you-mean of
// kube.MissingKindError; a group/version that is not served is a CRD not
// installed yet, a warning. Either way b waits for its kind.
func logKindNotServed(b *Binding, err error) {
	var missing *kube.MissingKindError
	if errors.As(err, &missing) {
		b.log.WithError(err).Error("kind is not served by its group/version, which serves other kinds: is it misspelled? Waiting for it")
		return
	}
	b.log.WithError(err).Warn("kind is not served yet; waiting for it (is its CRD installed?)")
}

// bindingContext is the context of b's own goroutines: ctx, ended early
// when b is removed.
func bindingContext(ctx context.Context, b *Binding) context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx != nil {
		return b.ctx
	}
	return ctx
}

func (w *Watcher) needsNamespaces(bindings []*Binding) bool {
	for _, b := range bindings {
		if ns := b.cfg.Namespace; ns != nil && ns.LabelSelector != nil {
			return true
		}
	}
	return false
}

// resolve looks up b's kind: b moves to Listing when it is served, to
// Unserved when it is not.
func (w *Watcher) resolve(b *Binding) error {
	res, err := w.clients.Resolver.Resolve(b.cfg.APIVersion, b.cfg.Kind)
	var missing *kube.MissingKindError
	b.mu.Lock()
	if err != nil {
		b.waiting, b.misspelled = err.Error(), errors.As(err, &missing)
	} else {
		b.res, b.waiting, b.misspelled = res, "", false
	}
	b.mu.Unlock()
	switch {
	case err == nil:
		w.out.setPhase(b, Listing)
	case errors.Is(err, kube.ErrUnknownKind):
		w.out.setPhase(b, Unserved)
	}
	return err
}

// namespacesOf returns the namespaces b watches now: "" for all.
func (w *Watcher) namespacesOf(b *Binding) []string {
	sel := b.cfg.Namespace
	if sel == nil || !b.res.Namespaced {
		return []string{""}
	}
	set := map[string]bool{}
	for _, n := range sel.Names {
		set[n] = true
	}
	if sel.LabelSelector != nil && w.ns != nil {
		for _, n := range w.ns.matching(sel.LabelSelector) {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (w *Watcher) keyFor(b *Binding, namespace string) informerKey {
	k := informerKey{resource: b.res.GVR.String(), namespace: namespace, fieldSelector: b.cfg.FieldSelector, shardSelector: w.shardSelector(b)}
	if b.cfg.LabelSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(b.cfg.LabelSelector); err == nil {
			k.labelSelector = sel.String()
		}
	}
	if len(b.cfg.NameSelector) == 1 {
		f := "metadata.name=" + b.cfg.NameSelector[0]
		if k.fieldSelector != "" {
			f = k.fieldSelector + "," + f
		}
		k.fieldSelector = f
	}
	return k
}

// informerFor returns an informer for key that b can join: a shared one not
// started yet, or a new one.
func (w *Watcher) informerFor(b *Binding, key informerKey) *informer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf := w.informers[key]; inf != nil && !inf.started {
		inf.refs++
		return inf
	}
	inf := newInformer(w.clients.Dynamic, w.streams, w.lists, w.health, key, b, w.log)
	inf.metrics, inf.defaultIdle = w.metrics, w.idle
	w.metrics.WatchStarted(key.resource)
	w.metrics.InformerStarted(key.resource, key.namespace)
	inf.refs = 1
	w.informers[key] = inf // a started one with the same key keeps running for its bindings
	return inf
}

func (w *Watcher) attachInitial(b *Binding) {
	for _, ns := range w.namespacesOf(b) {
		inf := w.informerFor(b, w.keyFor(b, ns))
		b.mu.Lock()
		removed := b.removed
		if !removed {
			b.sources[ns] = &source{inf: inf, slot: inf.attach(b)}
		}
		b.mu.Unlock()
		if removed {
			w.release(inf) // removed meanwhile (a reload)
		}
	}
}

// run starts b's informers and delivers its Synchronization once its
// sources have listed (those it has then: a namespace that starts matching,
// or a new share, may replace or add some meanwhile), calling listed just
// before; with a resynchronizationPeriod, it delivers it again every
// period.
func (w *Watcher) run(ctx context.Context, b *Binding, listed func()) error {
	b.mu.Lock()
	var infs []*informer
	for _, src := range b.sources {
		infs = append(infs, src.inf.(*informer))
	}
	b.mu.Unlock()
	for _, inf := range infs {
		if err := inf.start(ctx); err != nil {
			return fmt.Errorf("hook %s: binding %q: %w", b.Hook.Name, b.cfg.Name, err)
		}
	}
	ctx = bindingContext(ctx, b)
	go func() {
		if !b.waitListed(ctx) {
			return
		}
		listed()
		b.synchronizeWhenListed()
		if p := b.cfg.ResynchronizationPeriod; p > 0 {
			t := time.NewTicker(p)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					b.synchronizeWhenListed()
				}
			}
		}
	}()
	return nil
}

// waitForKind retries resolving b's kind with growing pauses (and at once
// when a CRD is added, see Refresh) until it resolves, then starts b.
func (w *Watcher) waitForKind(ctx context.Context, b *Binding) {
	delay := w.kindRetryMin
	bctx := bindingContext(ctx, b)
	for {
		select {
		case <-bctx.Done():
			return
		case <-time.After(delay):
		}
		began := time.Now()
		w.clients.Resolver.Refresh()
		if err := w.resolve(b); err == nil {
			b.log.Info("kind is served now; starting the binding")
			w.attachInitial(b)
			if err := w.run(ctx, b, w.enableTimers([]*Binding{b}, began)[b.Hook.Name].listed); err != nil {
				b.log.WithError(err).Error("cannot start the binding")
			}
			return
		} else if !errors.Is(err, kube.ErrUnknownKind) {
			b.log.WithError(err).Warn("resolving the kind failed; retrying")
		}
		delay = min(delay*2, w.kindRetryMax)
	}
}

// StatusWritten records that a hook wrote the status of an object, so that
// its bindings ignore the resulting status-only modification. Bindings
// forget the object when it leaves them.
func (w *Watcher) StatusWritten(hookName, resource, namespace, name string) {
	statusWritten(w.all(), hookName, resource, namespace, name)
}

func statusWritten(bindings []*Binding, hookName, resource, namespace, name string) {
	for _, b := range bindings {
		if b.Hook.Name == hookName && b.served() && b.res.GVR.String() == resource {
			b.statusWritten(namespace, name)
		}
	}
}

// Synced reports whether every started binding whose kind is served has
// delivered its Synchronization, and names those that have not. Bindings
// added by a reload (Add) are not waited for: an operator that was ready
// stays ready while they list (a watch of theirs that fails shows in
// Broken).
func (w *Watcher) Synced() (bool, []string) {
	var waiting []string
	for _, b := range w.all() {
		if p := b.Phase(); p != Synced && p != Unserved && p != Resolving && !b.reloaded {
			waiting = append(waiting, b.Hook.Name+"/"+b.cfg.Name)
		}
	}
	return len(waiting) == 0, waiting
}

// Changed returns a channel that is closed at the next change of any
// binding's Phase: read the phases, then wait on it, to see every change.
func (w *Watcher) Changed() <-chan struct{} { return w.out.changes() }

// subscribe adds namespace ns to b while running (a namespace that started
// matching its namespace.labelSelector).
func (w *Watcher) subscribe(b *Binding, ns string) {
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	b.mu.Lock()
	_, have := b.sources[ns]
	b.mu.Unlock()
	if have || !b.served() {
		return
	}
	inf := w.informerFor(b, w.keyFor(b, ns))
	b.mu.Lock()
	if b.removed {
		b.mu.Unlock()
		w.release(inf)
		return
	}
	// Once the binding has synchronized, the namespace's objects are new
	// to it: they arrive as Added events.
	src := &source{inf: inf, slot: inf.attach(b), live: b.out.phaseOf(b) >= Held}
	b.sources[ns] = src
	b.mu.Unlock()
	b.log.WithField("namespace", ns).Info("namespace matches now; watching it")
	if err := inf.start(ctx); err != nil {
		b.log.WithError(err).Error("cannot watch the namespace")
	}
}

// unsubscribe drops namespace ns from b (it stopped matching, or was
// deleted). Its objects leave b's snapshots; no events are delivered for them.
func (w *Watcher) unsubscribe(b *Binding, ns string) {
	b.mu.Lock()
	src, have := b.sources[ns]
	delete(b.sources, ns)
	b.forgetNamespaceLocked(ns)
	b.mu.Unlock()
	if !have {
		return
	}
	b.log.WithField("namespace", ns).Info("namespace no longer matches; stopped watching it")
	w.release(src.inf.(*informer))
}

// Broken names the watches that failed and have not recovered. A failed
// watch counts as recovered when it delivers an event again, or when a
// list of its resource succeeds now (a probe with a short timeout): the
// API server answers again, and the informer resumes its watch.
func (w *Watcher) Broken(ctx context.Context) []string {
	w.mu.Lock()
	var infs []*informer
	var out []string
	for _, inf := range w.informers {
		if inf.stale.Load() {
			out = append(out, inf.key.String()+": delivered no event and no bookmark for "+inf.idle.String()+"; listing again")
			continue
		}
		if inf.broken.Load() {
			infs = append(infs, inf)
		}
	}
	w.mu.Unlock()
	for _, inf := range infs {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := inf.client.List(pctx, metav1.ListOptions{Limit: 1, LabelSelector: inf.key.labelSelector, FieldSelector: inf.key.fieldSelector})
		cancel()
		if err == nil {
			inf.broken.Store(false)
			continue
		}
		out = append(out, inf.key.String()+": "+err.Error())
	}
	sort.Strings(out)
	return out
}

// Cached returns the resourceVersion of the object of resource (a GVR
// string) in namespace ("" for cluster-scoped) named name, if an
// informer's cache holds it: as of the last event the watch delivered.
// Writers use it to guess whether an object exists, and its version,
// before asking the API server.
func (w *Watcher) Cached(resource, namespace, name string) (string, bool) {
	w.mu.Lock()
	var infs []*informer
	for key, inf := range w.informers {
		if key.resource == resource && (key.namespace == "" || key.namespace == namespace) {
			infs = append(infs, inf)
		}
	}
	w.mu.Unlock()
	for _, inf := range infs {
		inf.mu.Lock()
		started := inf.started
		inf.mu.Unlock()
		if !started {
			continue
		}
		if e := inf.get(namespace, name); e != nil {
			return e.ResourceVersion, true
		}
	}
	return "", false
}
