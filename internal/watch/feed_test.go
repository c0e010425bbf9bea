package watch

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// This file has what the tests of the Binding code need to drive it through
// Memory: a store of objects, a Sink that writes down what it is told, and
// hooks made from configuration text.

var (
	cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// store is an Objects: what the cluster holds, changed by the tests before
// they tell Memory about the change.
type store struct {
	objs map[schema.GroupVersionResource]map[string]*unstructured.Unstructured
}

func (s *store) List(gvr schema.GroupVersionResource, namespace string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range s.objs[gvr] {
		if namespace == "" || u.GetNamespace() == namespace {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(entryKey(a.GetNamespace(), a.GetName()), entryKey(b.GetNamespace(), b.GetName()))
	})
	return out
}

func (s *store) put(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	if s.objs == nil {
		s.objs = map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{}
	}
	if s.objs[gvr] == nil {
		s.objs[gvr] = map[string]*unstructured.Unstructured{}
	}
	s.objs[gvr][entryKey(u.GetNamespace(), u.GetName())] = u
}

func (s *store) remove(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	delete(s.objs[gvr], entryKey(u.GetNamespace(), u.GetName()))
}

// fixtureEnv is a Memory over a store, reporting to a recordingSink.
type fixtureEnv struct {
	t     *testing.T
	store *store
	sink  *recordingSink
	mem   *Memory
}

// newFixtureEnv loads one hook per configuration (named h1, h2, ...).
func newFixtureEnv(t *testing.T, configs ...string) *fixtureEnv {
	t.Helper()
	var hooks []*hook.Hook
	for i, c := range configs {
		name := fmt.Sprintf("h%d", i+1)
		cfg, err := hook.ParseConfig(name, []byte(c))
		if err != nil {
			t.Fatalf("config of %s: %v", name, err)
		}
		hooks = append(hooks, &hook.Hook{Name: name, Config: cfg})
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	e := &fixtureEnv{t: t, store: &store{}, sink: &recordingSink{}}
	mem, err := NewMemory(hooks, kube.NewStaticResolver(kube.BuiltinResources()), e.store, e.sink, log)
	if err != nil {
		t.Fatal(err)
	}
	e.mem = mem
	return e
}

// apply puts obj into the store and tells Memory, as the watch would.
func (e *fixtureEnv) apply(gvr schema.GroupVersionResource, event string, obj *unstructured.Unstructured) {
	if event == hook.Deleted {
		e.store.remove(gvr, obj)
	} else {
		e.store.put(gvr, obj)
	}
	e.mem.Notify(gvr, event, obj)
}

func (e *fixtureEnv) binding(hookName, name string) *Binding {
	e.t.Helper()
	b := e.mem.Binding(hookName, name)
	if b == nil {
		e.t.Fatalf("no binding %s/%s", hookName, name)
	}
	return b
}

// expect checks what the sink was told since the last call, and forgets it.
func (e *fixtureEnv) expect(want ...string) {
	e.t.Helper()
	got := e.sink.take()
	if !slices.Equal(got, want) {
		e.t.Errorf("the sink was told\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// recordingSink writes down each call as one line:
// "h1/b: Synchronization [ns/a ns/b]", "h1/b: Added ns/a {filterResult}",
// "h1/b: EnsureFinalizer ns/a". It fails the test when calls overlap, and
// calls back into the binding (Snapshot, Phase) as a Sink may.
type recordingSink struct {
	mu      sync.Mutex
	lines   []string
	calling bool
	overlap bool
}

func (s *recordingSink) enter(b *Binding, line string) {
	b.Snapshot() // a Sink may read the binding: no lock of the watch is held
	b.Phase()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calling {
		s.overlap = true
	}
	s.calling = true
	s.lines = append(s.lines, b.Hook.Name+"/"+b.Name()+": "+line)
}

func (s *recordingSink) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calling = false
}

func (s *recordingSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.lines
	s.lines = nil
	return out
}

func (s *recordingSink) Synchronization(b *Binding, objects []binding.Object) {
	names := make([]string, len(objects))
	for i, o := range objects {
		names[i] = entryKey(o.Namespace, o.Name)
	}
	s.enter(b, "Synchronization ["+strings.Join(names, " ")+"]")
	s.leave()
}

func (s *recordingSink) Event(b *Binding, watchEvent string, obj binding.Object) {
	line := watchEvent + " " + entryKey(obj.Namespace, obj.Name)
	if obj.FilterResult != nil {
		line += " " + string(obj.FilterResult)
	}
	s.enter(b, line)
	s.leave()
}

func (s *recordingSink) EnsureFinalizer(b *Binding, namespace, name string) {
	s.enter(b, "EnsureFinalizer "+entryKey(namespace, name))
	s.leave()
}

// configMap returns a ConfigMap with data and labels given as "k=v" pairs.
func configMap(namespace, name, rv string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": namespace, "name": name, "uid": "uid-" + namespace + "-" + name, "resourceVersion": rv},
		"data":     data,
	}}
}

func namespace(name string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "labels": labels},
	}}
}

func discardLog() *logrus.Logger {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return log
}
