package watch

import (
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// storeNote is one notification of an objectStore, with what its cache
// held of that object when the notification came.
type storeNote struct {
	event, old, obj string
	cached          string
}

func testStore(t *testing.T) (*objectStore, *[]storeNote) {
	t.Helper()
	var notes []storeNote
	s := &objectStore{items: map[string]*entry{}}
	s.transform = func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		return newEntry(u, nil, false, false), nil
	}
	version := func(e *entry) string {
		if e == nil {
			return ""
		}
		return e.Name + "@" + e.ResourceVersion
	}
	s.notify = func(event string, old, e *entry) {
		notes = append(notes, storeNote{event: event, old: version(old), obj: version(e),
			cached: version(s.get(entryKey(e.Namespace, e.Name)))})
	}
	return s, &notes
}

func storeObject(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// TestObjectStoreNotifiesAsClientGoInformers: the notifications are those
// client-go's informer gives (an event for a cached object is an update,
// else an add; a list deletes what it no longer holds first, with the
// cache's last state of it, then adds or updates in its order), each given
// after the cache holds the change.
func TestObjectStoreNotifiesAsClientGoInformers(t *testing.T) {
	s, notes := testStore(t)
	if s.synced.Load() {
		t.Fatal("synced before any list")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Replace([]any{storeObject("a", "1"), storeObject("b", "2")}, "2"))
	if !s.synced.Load() {
		t.Error("not synced after the first list")
	}
	must(s.Add(storeObject("c", "3")))
	must(s.Update(storeObject("a", "4")))
	must(s.Add(storeObject("b", "5"))) // an ADDED for an object the cache holds: an update
	must(s.Delete(storeObject("c", "6")))
	// A relist: a gone, b changed, d new; deletions come first.
	must(s.Replace([]any{storeObject("d", "7"), storeObject("b", "8")}, "8"))

	want := []storeNote{
		{event: hook.Added, obj: "a@1", cached: "a@1"},
		{event: hook.Added, obj: "b@2", cached: "b@2"},
		{event: hook.Added, obj: "c@3", cached: "c@3"},
		{event: hook.Modified, old: "a@1", obj: "a@4", cached: "a@4"},
		{event: hook.Modified, old: "b@2", obj: "b@5", cached: "b@5"},
		{event: hook.Deleted, obj: "c@6", cached: ""},
		{event: hook.Deleted, obj: "a@4", cached: ""}, // the cache's last state of a
		{event: hook.Added, obj: "d@7", cached: "d@7"},
		{event: hook.Modified, old: "b@5", obj: "b@8", cached: "b@8"},
	}
	if !reflect.DeepEqual(*notes, want) {
		t.Errorf("notifications\n got %+v\nwant %+v", *notes, want)
	}
	var names []string
	for _, e := range s.list() {
		names = append(names, e.Name+"@"+e.ResourceVersion)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"b@8", "d@7"}) || s.len() != 2 {
		t.Errorf("cache holds %v (len %d), want [b@8 d@7]", names, s.len())
	}
}

// TestObjectStoreRefusesWhatIsNotAnObject: a transform result that is not
// an entry is an error for the reflector, and nothing is notified.
func TestObjectStoreRefusesWhatIsNotAnObject(t *testing.T) {
	s, notes := testStore(t)
	if err := s.Add("not an object"); err == nil {
		t.Error("Add of a string: no error")
	}
	if err := s.Replace([]any{storeObject("a", "1"), 42}, "1"); err == nil {
		t.Error("Replace with a number in the list: no error")
	}
	if len(*notes) != 0 || s.len() != 0 || s.synced.Load() {
		t.Errorf("after refused input: %d notifications, %d cached, synced %v; want none", len(*notes), s.len(), s.synced.Load())
	}
}
