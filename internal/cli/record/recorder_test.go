package record

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/jq"
	"github.com/hook-operator/hook-operator/internal/watch"
)

func cm(name, uid, rv string) binding.Object {
	raw, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "n", "uid": uid, "resourceVersion": rv, "generation": 1},
	})
	return binding.Object{Namespace: "n", Name: name, Raw: raw}
}

func TestRecorderRecordsEventsOnceAfterEverySynchronization(t *testing.T) {
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	r := newRecorder(log)
	b1, b2 := &watch.Binding{}, &watch.Binding{}
	r.expect([]*watch.Binding{b1, b2})

	r.Synchronization(b1, []binding.Object{cm("a", "u1", "1")})
	r.Event(b1, hook.Added, cm("early", "u0", "2")) // b2 has not synchronized yet
	select {
	case <-r.synced:
		t.Fatal("synced before the second binding's Synchronization")
	default:
	}
	r.Synchronization(b2, []binding.Object{cm("a", "u1", "3"), cm("b", "u2", "1")})
	<-r.synced
	r.Event(b1, hook.Modified, cm("a", "u1", "4"))
	r.Event(b2, hook.Modified, cm("a", "u1", "4")) // the same change, seen twice
	r.Event(b2, watch.Finalize, cm("a", "u1", "4"))
	r.Event(b1, hook.Deleted, cm("a", "u1", "4"))
	r.stop()
	r.Event(b1, hook.Added, cm("late", "u9", "9"))

	f := r.fixture()
	if len(f.Objects) != 2 {
		t.Fatalf("%d objects, want a and b", len(f.Objects))
	}
	for _, o := range f.Objects {
		if o.GetName() == "a" && o.GetResourceVersion() != "3" {
			t.Errorf("a at resourceVersion %s; want the later Synchronization's 3", o.GetResourceVersion())
		}
		_ = o.DeepCopy() // panics on numbers unstructured objects cannot hold
	}
	var got []string
	for _, ev := range f.Events {
		got = append(got, ev.Type+" "+ev.Object.GetName()+"@"+ev.Object.GetResourceVersion())
	}
	if want := []string{"Modified a@4", "Deleted a@4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestRecorderWithoutBindings(t *testing.T) {
	r := newRecorder(logrus.New())
	r.expect(nil)
	select {
	case <-r.synced:
	default:
		t.Error("a recording without bindings never synchronizes")
	}
}

func TestRecordingHooksLeaveTheHooksAlone(t *testing.T) {
	f, err := jq.Compile(".data")
	if err != nil {
		t.Fatal(err)
	}
	b := hook.KubernetesBinding{
		Kind: "ConfigMap", JQFilter: ".data", Filter: f, ExecuteHookOnEvent: []string{hook.Added},
		Finalizer: "example.com/f", ResynchronizationPeriod: time.Minute,
	}
	b.Name = "cms"
	orig := &hook.Hook{Name: "a.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{b}, Schedule: []hook.ScheduleBinding{{Crontab: "* * * * *"}}}}
	noKube := &hook.Hook{Name: "b.sh", Config: hook.Config{Schedule: []hook.ScheduleBinding{{Crontab: "* * * * *"}}}}
	before := *orig
	before.Config.Kubernetes = append([]hook.KubernetesBinding(nil), orig.Config.Kubernetes...)

	got := recordingHooks([]*hook.Hook{orig, noKube})
	if len(got) != 1 || got[0] == orig || got[0].Name != "a.sh" || len(got[0].Config.Schedule) != 0 {
		t.Fatalf("copies %+v", got)
	}
	c := got[0].Config.Kubernetes[0]
	if !c.KeepFullObjectsInMemory || c.Filter != nil || c.JQFilter != "" || c.Finalizer != "" || c.ResynchronizationPeriod != 0 ||
		!c.ExecuteHookOnSynchronization || !reflect.DeepEqual(c.ExecuteHookOnEvent, []string{hook.Added, hook.Modified, hook.Deleted}) {
		t.Errorf("recorded binding %+v", c)
	}
	if c.Name != "cms" || c.Kind != "ConfigMap" {
		t.Errorf("the binding lost its identity: %+v", c)
	}
	if !reflect.DeepEqual(orig.Config.Kubernetes, before.Config.Kubernetes) {
		t.Errorf("the loaded hook changed: %+v", orig.Config.Kubernetes[0])
	}
}

func TestOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := createOutput(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.w.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Errorf("the file changed before commit: %q", data)
	}
	if err := o.commit(); err != nil {
		t.Fatal(err)
	}
	o.discard()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" || info.Mode().Perm() != 0o600 {
		t.Errorf("after commit: %q, mode %v", data, info.Mode().Perm())
	}

	o, err = createOutput(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.discard()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("discard left files behind: %v", entries)
	}
	if _, err := createOutput(dir, nil); err == nil {
		t.Error("--out naming a folder was accepted")
	}
	if _, err := createOutput(filepath.Join(dir, "missing", "rec.yaml"), nil); err == nil {
		t.Error("--out in a missing folder was accepted")
	}
}
