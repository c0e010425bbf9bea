package replay_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/replay"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// contextLog collects the binding contexts of runs, one by one.
type contextLog struct {
	mu       sync.Mutex
	contexts []map[string]any
}

func (l *contextLog) add(t *testing.T, data []byte) {
	var cs []map[string]any
	if err := json.Unmarshal(data, &cs); err != nil {
		t.Errorf("contexts are not a JSON array of objects: %v\n%s", err, data)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.contexts = append(l.contexts, cs...)
}

func (l *contextLog) get() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]any(nil), l.contexts...)
}

// byKey orders contexts so that two logs can be compared whatever runs the
// live queue merged them into. Event contexts are compared without their
// snapshots: live, a snapshot of another binding comes from another
// informer, which may not have seen the same change yet; replay delivers
// each change to every binding at once.
func byKey(cs []map[string]any) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for _, c := range cs {
		if c["type"] == "Event" {
			c = maps.Clone(c)
			delete(c, "snapshots")
		}
		k, _ := c["binding"].(string)
		if t, _ := c["type"].(string); t != "" {
			k += "/" + t
		}
		if ev, _ := c["watchEvent"].(string); ev != "" {
			k += "/" + ev
		}
		out[k] = append(out[k], c)
	}
	return out
}

func loadHooks(t *testing.T, dir string) []*hook.Hook {
	t.Helper()
	hooks, err := hook.Load(context.Background(), dir, hook.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// writeHook writes a bash hook that prints config on --config and does
// nothing else.
func writeHook(t *testing.T, dir, name, config string) {
	t.Helper()
	script := "#!/usr/bin/env bash\nif [[ \"${1:-}\" == --config ]]; then cat <<'EOF'\n" + config + "\nEOF\nfi\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func configMap(ns, name string, labels map[string]string, data map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	u.Object["data"] = d
	return u
}

// For the same objects and changes, replay builds exactly the binding
// contexts the live runtime built on the cluster: Synchronization with
// selectors, jqFilter, keepFullObjectsInMemory: false, snapshots and
// groups; then Modified, an object leaving a label selector, and Deleted.
func TestIntegrationReplayContextsMatchLive(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	writeHook(t, dir, "watch.sh", `{"configVersion":"v1","kubernetes":[
 {"name":"labelled","apiVersion":"v1","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},
  "labelSelector":{"matchLabels":{"app":"demo"}},"jqFilter":".data","keepFullObjectsInMemory":false},
 {"name":"named","kind":"configmaps","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},
  "nameSelector":{"matchNames":["b","c"]},"includeSnapshotsFrom":["labelled"]}
]}`)
	hooks := loadHooks(t, dir)

	cms := c.Dynamic.Resource(configMaps).Namespace(ns)
	for _, cm := range []*unstructured.Unstructured{
		configMap(ns, "a", map[string]string{"app": "demo"}, map[string]string{"k": "1"}),
		configMap(ns, "b", map[string]string{"app": "demo"}, map[string]string{"k": "2"}),
		configMap(ns, "c", nil, map[string]string{"k": "3"}),
	} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The live runtime.
	var live contextLog
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(testWriter{t})
	op := operator.New(hooks, clients, operator.Options{
		HookTimeout: time.Minute, ShutdownGrace: 5 * time.Second,
		Report: func(r executor.Report) { live.add(t, r.Contexts) },
	}, log)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	mgr := manager.New(manager.Options{Log: log})
	always, leading := op.Runnables()
	mgr.Add(manager.Always, "operator", always)
	mgr.Add(manager.Leading, "hooks", leading)
	go func() { done <- mgr.Run(runCtx) }()
	waitFor(t, "both Synchronization runs", func() bool { return len(live.get()) >= 2 })
	objects := listAll(t, ctx, c, ns)

	// Changes: "a" modified (filter result changes), "b" leaves the label
	// selector, "c" deleted.
	var events []fixture.Event
	a, _ := cms.Get(ctx, "a", metav1.GetOptions{})
	a.Object["data"] = map[string]any{"k": "10"}
	a, err = cms.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, fixture.Event{Type: "Modified", Object: a})
	waitFor(t, "the Modified event of a", func() bool { return len(live.get()) >= 3 })
	b, _ := cms.Get(ctx, "b", metav1.GetOptions{})
	b.SetLabels(map[string]string{"app": "other"})
	b, err = cms.Update(ctx, b, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, fixture.Event{Type: "Modified", Object: b})
	waitFor(t, "the events of b", func() bool { return len(live.get()) >= 5 })
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deleted event of c", func() bool { return len(live.get()) >= 6 })
	// As record does, the event carries the resourceVersion of the deletion
	// that the live watch reported.
	gone := configMap(ns, "c", nil, nil)
	for _, c := range live.get() {
		if obj, ok := c["object"].(map[string]any); ok && c["watchEvent"] == "Deleted" && c["binding"] == "named" {
			md := obj["metadata"].(map[string]any)
			gone.SetResourceVersion(md["resourceVersion"].(string))
		}
	}
	events = append(events, fixture.Event{Type: "Deleted", Object: gone})
	time.Sleep(500 * time.Millisecond) // nothing else may arrive
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Replay of the same objects and changes.
	var replayed contextLog
	sum, err := replay.Run(ctx, replay.Options{
		Hooks:   hooks,
		Fixture: &fixture.Fixture{Objects: objects, Events: events},
		Log:     log,
		Report:  func(r executor.Report, _ []memcluster.Change) { replayed.add(t, r.Contexts) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 {
		t.Errorf("%d replayed runs failed", sum.Failed)
	}
	want, got := byKey(live.get()), byKey(replayed.get())
	if len(want) == 0 || len(live.get()) != 6 {
		t.Fatalf("live contexts: %d, want 6:\n%v", len(live.get()), live.get())
	}
	keys := func(m map[string][]map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if !reflect.DeepEqual(keys(want), keys(got)) {
		t.Fatalf("contexts by binding/type/event differ:\nlive:   %v\nreplay: %v", keys(want), keys(got))
	}
	for k := range want {
		if !reflect.DeepEqual(want[k], got[k]) {
			wj, _ := json.MarshalIndent(want[k], "", " ")
			gj, _ := json.MarshalIndent(got[k], "", " ")
			t.Errorf("%s: replay differs from live\nlive:\n%s\nreplay:\n%s", k, wj, gj)
		}
	}
}

func listAll(t *testing.T, ctx context.Context, c *testcluster.Cluster, ns string) []*unstructured.Unstructured {
	t.Helper()
	list, err := c.Dynamic.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		obj := list.Items[i]
		// Lists leave out apiVersion and kind of their items.
		obj.SetAPIVersion("v1")
		obj.SetKind("ConfigMap")
		out = append(out, &obj)
	}
	return out
}

// waitFor waits for cond with a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
