package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/memlimit"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// informerKey identifies what an informer lists and watches. Bindings with
// equal keys share one informer.
type informerKey struct {
	resource      string // GVR string
	namespace     string // "" = all namespaces
	labelSelector string
	fieldSelector string
	// shardSelector asks the API server for one share of the objects
	// (KEP-5866): the replica's own, with --sharding.
	shardSelector string
}

func (k informerKey) String() string {
	s := k.resource
	if k.namespace != "" {
		s += " in namespace " + k.namespace
	}
	if k.labelSelector != "" {
		s += " labels " + k.labelSelector
	}
	if k.fieldSelector != "" {
		s += " fields " + k.fieldSelector
	}
	if k.shardSelector != "" {
		s += " (this replica's shard)"
	}
	return s
}

// informer is one informer and the bindings attached to it. The binding
// list is fixed before the informer starts, because every stored entry
// holds one filter result per attached binding.
//
// It is client-go's reflector feeding an objectStore, not an informer of
// client-go's: the bindings sharing it are already handled by dispatch, and
// a SharedIndexInformer's per-handler goroutines, or even a plain
// informer's FIFO, would pass every event through more goroutines, each
// handoff a thread wake-up (see objectStore).
type informer struct {
	key      informerKey
	lw       *cache.ListWatch
	store    *objectStore
	bindings []*Binding
	keepFull bool
	// finalizers is set when a binding manages a finalizer: entries then
	// keep the object's finalizers.
	finalizers bool
	// lean, set by start, is what its watches decode of each object when
	// the bindings read only some of it (see lean.go); nil: everything.
	lean leanKeep
	// lists records whether the API server serves streaming lists.
	lists   *watchLists
	log     logrus.FieldLogger
	metrics *metrics.Metrics

	// broken is set when the watch fails, and cleared by the next event or
	// by a successful probe (see Watcher.Broken).
	broken atomic.Bool
	// stale is set when the watch went idle (see idle) and cleared when it
	// delivers again, an event or a bookmark, or a list succeeds: until
	// then readiness names it.
	stale atomic.Bool
	// fresh is when the informer's view was last known to be current: its
	// start, its latest event or bookmark, or a list that succeeded (as
	// monotonic time since epoch). The bindings' view age is read from it.
	fresh atomic.Int64
	// idle, set by start, is how long its watches may deliver nothing
	// before they are ended and listed again: the shortest stale threshold
	// of its bindings (hook.StaleAfterOf), zero for never. defaultIdle
	// is the operator's --watch-idle-timeout, for bindings that set none.
	idle, defaultIdle time.Duration
	client            dynamic.ResourceInterface
	started           bool
	// stopped is set by stop: the informer never starts after it.
	stopped bool
	cancel  context.CancelFunc
	// progress is the first list's part in the start-up GC target (see
	// memlimit.StartList): it counts the objects the list stores, and is
	// told how many to expect by a limit=1 list (countObjects).
	progress *memlimit.List
	refs     int // sources using it; stopped at zero
	done     chan struct{}
	mu       sync.Mutex
}

// newInformer returns the informer of key, first for binding b. Its watches
// go through streams when there is one, else through the dynamic client.
// Lists and watches that fail because the API server is away wait for it
// (health) and are made again the moment it answers, rather than failing
// to the reflector, whose backoff grows with each failure.
func newInformer(client dynamic.Interface, streams *streams, lists *watchLists, health *kube.Health, key informerKey, b *Binding, log logrus.FieldLogger) *informer {
	ri := client.Resource(b.res.GVR)
	var nri dynamic.ResourceInterface = ri
	if key.namespace != "" {
		nri = ri.Namespace(key.namespace)
	}
	i := &informer{key: key, log: log.WithField("watch", key.String()), done: make(chan struct{}), client: nri, lists: lists}
	i.lw = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector, opts.FieldSelector, opts.ShardSelector = key.labelSelector, key.fieldSelector, key.shardSelector
			for {
				if err := health.Wait(ctx); err != nil {
					return nil, err
				}
				list, err := nri.List(ctx, opts)
				if err == nil {
					i.touch(time.Now())
					return list, nil
				}
				i.failed(ctx, err)
				if !health.Failed(ctx, err) {
					return list, err
				}
			}
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector, opts.FieldSelector, opts.ShardSelector = key.labelSelector, key.fieldSelector, key.shardSelector
			if streaming(opts) && lists.unsupported() {
				return nil, errNoStreamingLists // the reflector lists instead
			}
			for {
				if err := health.Wait(ctx); err != nil {
					return nil, err
				}
				var w watch.Interface
				var err error
				if streams != nil {
					w, err = streams.watch(ctx, b.res.GVR, key.namespace, opts, streamHooks{
						failed:   func(err error) { i.failed(ctx, err) },
						ended:    i.ended,
						received: i.touch,
						lean:     i.lean,
						idle:     i.idle,
					})
				} else if w, err = nri.Watch(ctx, opts); err == nil {
					w = watch.Filter(w, func(e watch.Event) (watch.Event, bool) { i.touch(time.Now()); return e, true })
				}
				if err == nil {
					return w, nil
				}
				if health.Failed(ctx, err) {
					i.failed(ctx, err)
					continue
				}
				if errors.Is(err, errWatchCut) {
					// The connection ended before the server answered: the
					// reflector simply watches again.
					return watch.NewEmptyWatch(), nil
				}
				if lists.refusal(ctx, opts, err) {
					return nil, err // not a failure: the reflector lists instead
				}
				i.failed(ctx, err)
				return nil, err
			}
		},
	}
	return i
}

// failed reports a failed list or watch: the reflector tries again by
// itself. Failures because the informer is stopping are not reported.
func (i *informer) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	i.log.WithError(err).Warn("watch failed; retrying")
	i.metrics.WatchError(i.key.resource, watchErrorType(err))
	if !i.listed() {
		// The bindings on it have not all listed: for each of their
		// hooks, a failed start of its kubernetes bindings.
		for n, b := range i.bindings {
			if !slices.ContainsFunc(i.bindings[:n], func(o *Binding) bool { return o.Hook.Name == b.Hook.Name }) {
				i.metrics.BindingsListFailed(b.Hook.Name)
			}
		}
	}
	i.broken.Store(true)
}

// watchErrorType sorts a failed list or watch as shell-operator's
// kubernetes_client_watch_errors_total does.
func watchErrorType(err error) string {
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return metrics.WatchErrorExpired
	case errors.Is(err, io.ErrUnexpectedEOF):
		return metrics.WatchErrorUnexpectedEOF
	case errors.Is(err, io.EOF):
		return metrics.WatchErrorEOF
	}
	return metrics.WatchErrorFail
}

// ended counts a watch stream that ended (watch_restarts_total); one
// that went idle makes the informer stale until it delivers again, and
// counts as shell-operator's dead informer (factory_informer_dead_total):
// its bindings saw no change until it lists again.
func (i *informer) ended(reason string) {
	if reason == endIdle {
		i.stale.Store(true)
		i.metrics.InformerDead(i.key.resource, i.key.namespace)
	}
	i.metrics.WatchRestart(i.key.resource, reason)
}

// attach adds b to the informer's bindings and returns its slot.
func (i *informer) attach(b *Binding) int {
	i.bindings = append(i.bindings, b)
	if b.cfg.KeepFullObjectsInMemory || b.cfg.Filter == nil {
		i.keepFull = true
	}
	if b.cfg.Finalizer != "" {
		i.finalizers = true
	}
	return len(i.bindings) - 1
}

// start runs the informer until its context ends. Calls after the first do
// nothing.
func (i *informer) start(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started || i.stopped {
		return nil // running, or let go of before it started (a share replaced)
	}
	i.lean = leanKeys(i.bindings, i.keepFull)
	i.idle = i.staleAfter()
	i.touch(time.Now()) // its age counts from its start until it lists
	i.progress = memlimit.StartList()
	i.store = &objectStore{transform: i.transform, notify: i.dispatch, items: map[string]*entry{}, listed: i.progress.Done}
	var lw cache.ListerWatcher = i.lw
	if i.lists.unsupported() {
		lw = noStreamingLists{i.lw}
	}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, i.store, cache.ReflectorOptions{Name: i.key.String()})
	ctx, i.cancel = context.WithCancel(ctx)
	i.started = true
	go i.countObjects(ctx)
	go func() {
		defer close(i.done)
		defer i.progress.Done() // stopped before its list ended
		r.RunWithContext(ctx)
	}()
	return nil
}

// countObjects tells the start-up GC target how many objects the first
// list will hold: a limit=1 list's remainingItemCount, plus its one item.
// The API server leaves the count out for lists with a label or field
// selector, and a shard selector is not counted either: the target then
// stays at its lowest until the list has ended.
func (i *informer) countObjects(ctx context.Context) {
	if i.key.labelSelector != "" || i.key.fieldSelector != "" || i.key.shardSelector != "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := i.client.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return // the list itself reports what is wrong
	}
	if rest := list.GetRemainingItemCount(); rest != nil {
		i.progress.Expect(*rest + int64(len(list.Items)))
	} else if list.GetContinue() == "" {
		i.progress.Expect(int64(len(list.Items)))
	}
}

func (i *informer) stop() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stopped = true
	if i.cancel != nil {
		i.cancel()
	}
}

// transform turns a listed or watched object into an entry, running every
// attached binding's jqFilter once, so that the cache never holds more than
// the bindings need.
func (i *informer) transform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already an entry (a streamed list's, made as it arrived)
	}
	if !i.store.synced.Load() {
		i.progress.Stored()
	}
	return newEntry(u, i.bindings, i.keepFull, i.finalizers), nil
}

// dispatch hands one notification to every attached binding.
func (i *informer) dispatch(event string, old, e *entry) {
	i.broken.Store(false)
	for slot, b := range i.bindings {
		b.notify(i, i.key.namespace, slot, event, old, e)
	}
}

// get returns the cached entry of one object, or nil.
func (i *informer) get(namespace, name string) *entry {
	return i.store.get(entryKey(namespace, name))
}

// list returns the entries in the informer's cache.
func (i *informer) list() []*entry { return i.store.list() }

func (i *informer) String() string { return fmt.Sprintf("informer(%s)", i.key) }

// listed reports whether the informer has started and handed every object
// of its first list to its bindings.
func (i *informer) listed() bool {
	i.mu.Lock()
	started := i.started
	i.mu.Unlock()
	return started && i.store.synced.Load()
}

// leanKeys returns the top-level keys the bindings' jqFilters read, when
// that is all they need of an object: no full objects kept, and every
// filter analysed (jq.Filter.TopLevelKeys). Otherwise nil: objects are
// decoded whole.
func leanKeys(bindings []*Binding, keepFull bool) leanKeep {
	if keepFull || len(bindings) == 0 {
		return nil
	}
	keep := leanKeep{}
	for _, b := range bindings {
		if b.cfg.Filter == nil {
			return nil
		}
		keys, ok := b.cfg.Filter.TopLevelKeys()
		if !ok {
			return nil
		}
		for _, k := range keys {
			keep[k] = true
		}
	}
	return keep
}
