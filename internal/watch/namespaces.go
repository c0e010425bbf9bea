package watch

import (
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// namespaces watches Namespace metadata for bindings with a
// namespace.labelSelector, and subscribes or unsubscribes them as
// namespaces start or stop matching.
type namespaces struct {
	w   *Watcher
	inf cache.SharedIndexInformer

	mu     sync.Mutex
	labels map[string]labels.Set // namespace -> labels
}

// newNamespaces builds the informer over the metadata client directly:
// client-go's metadatainformer package would link its informer factory and
// with it every built-in API group (see docs/design/api-server.md,
// "Discovery, kind resolution and Events").
func newNamespaces(w *Watcher) *namespaces {
	client := w.clients.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{})
	return &namespaces{w: w, inf: inf, labels: map[string]labels.Set{}}
}

// start runs the informer and returns once it has listed, so bindings see
// the matching namespaces from the start.
func (n *namespaces) start(ctx context.Context) error {
	_, err := n.inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { n.update(obj, initial) },
		UpdateFunc: func(_, obj any) { n.update(obj, false) },
		DeleteFunc: func(obj any) { n.remove(obj) },
	})
	if err != nil {
		return err
	}
	go n.inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), n.inf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

func (n *namespaces) update(obj any, initial bool) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	n.mu.Lock()
	n.labels[m.Name] = labels.Set(m.Labels)
	n.mu.Unlock()
	if initial {
		return // bindings read the initial set through matching()
	}
	n.reconcile(m.Name, labels.Set(m.Labels), true)
}

func (n *namespaces) remove(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	n.mu.Lock()
	delete(n.labels, m.Name)
	n.mu.Unlock()
	n.reconcile(m.Name, nil, false)
}

// reconcile subscribes or unsubscribes every label-selecting binding for
// namespace ns.
func (n *namespaces) reconcile(ns string, set labels.Set, exists bool) {
	for _, b := range n.w.all() {
		sel := b.cfg.Namespace
		if sel == nil || sel.LabelSelector == nil || !b.served() || !b.res.Namespaced {
			continue
		}
		if slices.Contains(sel.Names, ns) {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
		if err != nil {
			continue
		}
		if exists && s.Matches(set) {
			n.w.subscribe(b, ns)
		} else {
			n.w.unsubscribe(b, ns)
		}
	}
}

// matching returns the namespaces whose labels match sel now.
func (n *namespaces) matching(sel *metav1.LabelSelector) []string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, set := range n.labels {
		if s.Matches(set) {
			out = append(out, name)
		}
	}
	return out
}
