package watch

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// Objects is what Memory reads objects from: replay's in-memory cluster.
type Objects interface {
	// List returns the objects of a resource (namespace "" = all), sorted
	// by namespace and name.
	List(gvr schema.GroupVersionResource, namespace string) []*unstructured.Unstructured
}

// Resolver resolves the kinds bindings name; *kube.Resolver is one.
type Resolver interface {
	Resolve(apiVersion, kind string) (kube.Resource, error)
}

// Memory feeds bindings from objects in memory instead of a cluster, one
// change at a time and synchronously, so that replay and hook tests are
// deterministic. It hands objects to the same Binding code as the live
// Watcher (filters, snapshots, finalizers, suppression of unchanged and own
// status modifications), so both deliver the same contexts.
//
// Selectors that the API server applies for the live watch (labelSelector,
// fieldSelector, nameSelector, namespace) are applied here in memory. Field
// selectors compare the object's value at the field's path as a string.
type Memory struct {
	bindings []*Binding
	out      *outbox
	objects  Objects
	feeds    map[*Binding]*memFeed
}

// NewMemory returns a Memory for the kubernetes bindings of hooks that
// reads objects from objects and reports to sink. A binding whose kind is
// unknown receives nothing, as a live binding waits for its CRD, and
// neither do the bindings whose contexts carry its snapshot (group,
// includeSnapshotsFrom); a warning says how to declare the kind.
func NewMemory(hooks []*hook.Hook, resolver Resolver, objects Objects, sink Sink, log logrus.FieldLogger) (*Memory, error) {
	m := &Memory{objects: objects, out: newOutbox(sink), feeds: map[*Binding]*memFeed{}}
	var all []*Binding
	phases := map[*Binding]Phase{}
	for _, h := range hooks {
		for i := range h.Config.Kubernetes {
			cfg := &h.Config.Kubernetes[i]
			b := newBinding(h, cfg, m.out, log)
			all = append(all, b)
			res, err := resolver.Resolve(cfg.APIVersion, cfg.Kind)
			if errors.Is(err, kube.ErrUnknownKind) {
				b.log.WithError(err).Warn("the binding's kind is unknown, so it receives nothing, and neither do the bindings of its group or that include its snapshot: add the kind's CustomResourceDefinition to the objects, or declare it under resources")
				phases[b] = Unserved
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("hook %s: binding %q: %w", h.Name, cfg.Name, err)
			}
			b.res = res
			f, err := newMemFeed(b)
			if err != nil {
				return nil, fmt.Errorf("hook %s: binding %q: %w", h.Name, cfg.Name, err)
			}
			b.sources[""] = &source{inf: f}
			m.feeds[b] = f
			m.bindings = append(m.bindings, b)
			phases[b] = Listing
		}
	}
	m.out.register(all)
	for _, b := range all {
		m.out.setPhase(b, phases[b])
	}
	return m, nil
}

// Bindings returns every binding, in hook and configuration order.
func (m *Memory) Bindings() []*Binding { return m.bindings }

// Binding returns the named kubernetes binding of a hook, or nil.
func (m *Memory) Binding(hookName, name string) *Binding {
	for _, b := range m.bindings {
		if b.Hook.Name == hookName && b.cfg.Name == name {
			return b
		}
	}
	return nil
}

// StatusWritten records that a hook wrote the status of an object, as
// Watcher.StatusWritten does.
func (m *Memory) StatusWritten(hookName, resource, namespace, name string) {
	statusWritten(m.bindings, hookName, resource, namespace, name)
}

// Synchronize loads every binding's objects and delivers its
// Synchronization, binding by binding in order. Call it once, first.
func (m *Memory) Synchronize() {
	for _, b := range m.bindings {
		f := m.feeds[b]
		for _, u := range m.objects.List(b.res.GVR, "") {
			if m.selects(f, u) {
				f.entries[entryKey(u.GetNamespace(), u.GetName())] = f.entry(u)
			}
		}
		b.synchronize()
	}
}

// Notify delivers one change of an object of resource gvr: "Added",
// "Modified" or "Deleted" as a watch reports it, with the object after the
// change (as it was last, for Deleted). A change that makes an object enter
// or leave a binding's selectors is delivered as Added or Deleted, as the
// API server's watch does. A Namespace whose labels change makes bindings
// with a namespace.labelSelector take up or drop its objects.
func (m *Memory) Notify(gvr schema.GroupVersionResource, event string, obj *unstructured.Unstructured) {
	for _, b := range m.bindings {
		if b.res.GVR.GroupResource() != gvr.GroupResource() {
			continue
		}
		f := m.feeds[b]
		in := event != hook.Deleted && m.selects(f, obj)
		m.deliver(b, f, obj, in, event)
	}
	if gvr.Group == "" && gvr.Resource == "namespaces" && event != hook.Deleted {
		m.namespaceChanged(obj.GetName())
	}
}

// deliver updates f for obj (in: whether the binding selects it now) and
// notifies b as the live watch would.
func (m *Memory) deliver(b *Binding, f *memFeed, obj *unstructured.Unstructured, in bool, event string) {
	key := entryKey(obj.GetNamespace(), obj.GetName())
	old := f.entries[key]
	switch {
	case in && old != nil:
		e := f.entry(obj)
		f.entries[key] = e
		b.notify(f, "", 0, hook.Modified, old, e)
	case in:
		e := f.entry(obj)
		f.entries[key] = e
		b.notify(f, "", 0, hook.Added, nil, e)
	case old != nil:
		delete(f.entries, key)
		e := f.entry(obj)
		if event != hook.Deleted {
			e = old // it left the selectors: the watch reports it as last seen
		}
		b.notify(f, "", 0, hook.Deleted, nil, e)
	}
}

// namespaceChanged re-evaluates, for bindings that select namespaces by
// label, the objects of namespace ns. Like the live watch, objects of a
// namespace that starts matching arrive as Added events, and those of one
// that stops matching leave the snapshots without events.
func (m *Memory) namespaceChanged(ns string) {
	for _, b := range m.bindings {
		if sel := b.cfg.Namespace; sel == nil || sel.LabelSelector == nil || !b.res.Namespaced {
			continue
		}
		f := m.feeds[b]
		for _, u := range m.objects.List(b.res.GVR, ns) {
			key := entryKey(u.GetNamespace(), u.GetName())
			in := m.selects(f, u)
			switch held := f.entries[key] != nil; {
			case in && !held:
				m.deliver(b, f, u, true, hook.Added)
			case !in && held:
				delete(f.entries, key)
				b.mu.Lock()
				delete(b.owned, key)
				b.mu.Unlock()
			}
		}
	}
}

// selects reports whether f's binding watches u.
func (m *Memory) selects(f *memFeed, u *unstructured.Unstructured) bool {
	b := f.b
	if !m.inNamespace(b, u.GetNamespace()) {
		return false
	}
	if len(b.cfg.NameSelector) > 0 && !slices.Contains(b.cfg.NameSelector, u.GetName()) {
		return false
	}
	if f.labels != nil && !f.labels.Matches(labels.Set(u.GetLabels())) {
		return false
	}
	if f.fields != nil && !f.fields.Matches(fieldSet(f.fields, u.Object)) {
		return false
	}
	return true
}

func (m *Memory) inNamespace(b *Binding, ns string) bool {
	sel := b.cfg.Namespace
	if sel == nil || !b.res.Namespaced {
		return true
	}
	if slices.Contains(sel.Names, ns) {
		return true
	}
	if sel.LabelSelector == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector)
	if err != nil {
		return false
	}
	for _, n := range m.objects.List(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "") {
		if n.GetName() == ns {
			return s.Matches(labels.Set(n.GetLabels()))
		}
	}
	return false
}

// memFeed holds one binding's entries in memory.
type memFeed struct {
	b       *Binding
	labels  labels.Selector
	fields  fields.Selector
	entries map[string]*entry
}

func newMemFeed(b *Binding) (*memFeed, error) {
	f := &memFeed{b: b, entries: map[string]*entry{}}
	if b.cfg.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(b.cfg.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		f.labels = sel
	}
	if b.cfg.FieldSelector != "" {
		sel, err := fields.ParseSelector(b.cfg.FieldSelector)
		if err != nil {
			return nil, fmt.Errorf("fieldSelector: %w", err)
		}
		f.fields = sel
	}
	return f, nil
}

// entry makes the entry of u as an informer with only f's binding would.
func (f *memFeed) entry(u *unstructured.Unstructured) *entry {
	cfg := f.b.cfg
	return newEntry(u.DeepCopy(), []*Binding{f.b}, cfg.KeepFullObjectsInMemory || cfg.Filter == nil, cfg.Finalizer != "")
}

func (f *memFeed) get(namespace, name string) *entry { return f.entries[entryKey(namespace, name)] }

func (f *memFeed) list() []*entry {
	keys := make([]string, 0, len(f.entries))
	for k := range f.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, f.entries[k])
	}
	return out
}

func entryKey(namespace, name string) string { return namespace + "/" + name }

// fieldSet gives the values of the fields sel asks about, read from the
// object by their dotted paths.
func fieldSet(sel fields.Selector, obj map[string]any) fields.Set {
	set := fields.Set{}
	for _, r := range sel.Requirements() {
		v, found, err := unstructured.NestedFieldNoCopy(obj, strings.Split(r.Field, ".")...)
		if err != nil || !found || v == nil {
			set[r.Field] = ""
			continue
		}
		set[r.Field] = fmt.Sprint(v)
	}
	return set
}
