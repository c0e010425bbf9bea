package sdk

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// docsContexts are the binding contexts of every shape, as docs/binding-contexts.md
// shows them.
const docsContexts = `[
  {"binding": "onStartup"},
  {"binding": "tick", "type": "Schedule"},
  {"binding": "pods", "type": "Synchronization",
   "objects": [{"object": {"kind": "Pod", "metadata": {"name": "web-1"}}, "filterResult": "Running"}]},
  {"binding": "pods", "type": "Synchronization", "objects": []},
  {"binding": "pods", "type": "Event", "watchEvent": "Modified",
   "object": {"kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop", "generation": 7}}, "filterResult": "Succeeded"},
  {"binding": "lean", "type": "Event", "watchEvent": "Deleted", "filterResult": null},
  {"binding": "tick", "type": "Schedule",
   "snapshots": {"pods": [{"object": {"kind": "Pod", "metadata": {"name": "web-1"}}, "filterResult": "Succeeded"}]}},
  {"binding": "deploys", "type": "Group", "groupName": "web", "snapshots": {"deploys": [], "pods": []}},
  {"binding": "dbs", "type": "Event", "watchEvent": "Finalize",
   "object": {"kind": "SampleDB", "metadata": {"name": "orders", "deletionTimestamp": "2026-11-21T22:00:00Z", "finalizers": ["db.example.com/snapshot"]}}}
]`

func TestBindingContextShapes(t *testing.T) {
	var cs []BindingContext
	if err := json.Unmarshal([]byte(docsContexts), &cs); err != nil {
		t.Fatal(err)
	}
	if cs[0].Binding != BindingOnStartup || cs[0].Type != "" {
		t.Errorf("onStartup: %+v", cs[0])
	}
	if cs[1].Type != TypeSchedule || cs[1].Snapshots != nil {
		t.Errorf("schedule: %+v", cs[1])
	}
	sync := cs[2]
	if sync.Type != TypeSynchronization || len(sync.Objects) != 1 || sync.Objects[0].Object.GetName() != "web-1" ||
		string(sync.Objects[0].FilterResult) != `"Running"` {
		t.Errorf("synchronization: %+v", sync)
	}
	if cs[3].Type != TypeSynchronization || len(cs[3].Objects) != 0 {
		t.Errorf("empty synchronization: %+v", cs[3])
	}
	ev := cs[4]
	if ev.WatchEvent != EventModified || ev.Object.GetNamespace() != "shop" || ev.Object.GetGeneration() != 7 {
		t.Errorf("event: %+v", ev)
	}
	var phase string
	if err := ev.DecodeFilterResult(&phase); err != nil || phase != "Succeeded" {
		t.Errorf("DecodeFilterResult: %q, %v", phase, err)
	}
	if r := ev.Object.Ref(); r != (Ref{Kind: "Pod", Namespace: "shop", Name: "web-1"}) {
		t.Errorf("Ref() = %+v", r)
	}
	lean := cs[5]
	if lean.Object != nil || string(lean.FilterResult) != "null" {
		t.Errorf("an event without object, with a null filter result: %+v (filterResult %q)", lean, lean.FilterResult)
	}
	if err := lean.DecodeObject(&appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "keepFullObjectsInMemory") {
		t.Errorf("DecodeObject without object: %v", err)
	}
	if got := cs[6].Snapshot("pods"); len(got) != 1 || got[0].Object.GetName() != "web-1" {
		t.Errorf("Snapshot(pods) = %+v", got)
	}
	if got := cs[6].Snapshot("nodes"); got != nil {
		t.Errorf("Snapshot(nodes) = %+v, want nil", got)
	}
	group := cs[7]
	if group.GroupName != "web" || len(group.Snapshots) != 2 {
		t.Errorf("group: %+v", group)
	}
	if got, err := DecodeSnapshot[appsv1.Deployment](group, "deploys"); err != nil || len(got) != 0 {
		t.Errorf("an empty snapshot decodes to nothing, got %v, %v", got, err)
	}
	fin := cs[8]
	if fin.WatchEvent != EventFinalize || fin.Object.GetDeletionTimestamp() == nil {
		t.Errorf("finalize: %+v", fin)
	}
}

func TestObjectNumbersAreInt64(t *testing.T) {
	var o Object
	if err := json.Unmarshal([]byte(`{"spec": {"size": 3, "ratio": 0.5}}`), &o); err != nil {
		t.Fatal(err)
	}
	size, found, err := unstructured.NestedInt64(o.Object, "spec", "size")
	if err != nil || !found || size != 3 {
		t.Errorf("NestedInt64(spec.size) = %d, %v, %v", size, found, err)
	}
	if r, _, _ := unstructured.NestedFloat64(o.Object, "spec", "ratio"); r != 0.5 {
		t.Errorf("ratio = %v", r)
	}
	if err := json.Unmarshal([]byte(`null`), &o); err == nil {
		t.Error("a null object should be an error")
	}
	// It marshals back as the plain object.
	data, err := json.Marshal(ObjectAndFilter{Object: &o})
	if err != nil || string(data) != `{"object":{"spec":{"ratio":0.5,"size":3}}}` {
		t.Errorf("marshal: %s, %v", data, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	var c BindingContext
	if err := json.Unmarshal([]byte(`{"binding": "b", "type": "Group", "snapshots": {
	  "deploys": [{"object": {"kind": "Deployment", "metadata": {"name": "web", "namespace": "app"}, "spec": {"replicas": "three"}}}],
	  "plain": [{"object": {"kind": "Deployment", "metadata": {"name": "web"}}}]}}`), &c); err != nil {
		t.Fatal(err)
	}
	_, err := DecodeSnapshot[appsv1.Deployment](c, "deploys")
	if err == nil || !strings.Contains(err.Error(), `snapshot "deploys", object 0: decoding Deployment app/web`) {
		t.Errorf("a value of the wrong type: %v", err)
	}
	_, err = DecodeSnapshotFilterResults[string](c, "plain")
	if err == nil || !strings.Contains(err.Error(), "no jqFilter") {
		t.Errorf("filter results of a binding without jqFilter: %v", err)
	}
	_, err = DecodeSnapshot[appsv1.Deployment](BindingContext{Binding: "x"}, "deploys")
	if err == nil || !strings.Contains(err.Error(), "it carries none") {
		t.Errorf("no snapshots at all: %v", err)
	}
}
