package binding

import (
	"encoding/json"
	"testing"
)

func TestShapeGroup(t *testing.T) {
	sync := Context{Binding: "pods", Type: TypeSynchronization, Objects: []Object{{Name: "p"}}}
	c := Shape(sync, "g", []string{"pods", "cms"}, []string{"secrets", "cms"})
	if c.Type != TypeGroup || c.GroupName != "g" || c.Objects != nil || c.Binding != "pods" {
		t.Fatalf("group context %+v", c)
	}
	if got := c.SnapshotsFrom; len(got) != 3 || got[0] != "cms" || got[1] != "pods" || got[2] != "secrets" {
		t.Errorf("SnapshotsFrom = %v", got)
	}
	plain := Shape(sync, "", nil, nil)
	if plain.Type != TypeSynchronization || plain.SnapshotsFrom != nil || len(plain.Objects) != 1 {
		t.Errorf("ungrouped context changed: %+v", plain)
	}
}

func TestFillSnapshotsReadsEachBindingOnce(t *testing.T) {
	contexts := []Context{
		{Binding: "a", Type: TypeGroup, GroupName: "g", SnapshotsFrom: []string{"a", "b"}},
		{Binding: "tick", Type: TypeSchedule, SnapshotsFrom: []string{"b"}},
		{Binding: "c", Type: TypeEvent, WatchEvent: "Added", Object: &Object{Name: "x", Raw: json.RawMessage(`{"k":1}`)}},
	}
	calls := map[string]int{}
	FillSnapshots(contexts, func(name string) []Object {
		calls[name]++
		if name == "b" {
			return []Object{{Name: "o", FilterResult: json.RawMessage(`1`)}}
		}
		return nil
	})
	if calls["a"] != 1 || calls["b"] != 1 {
		t.Errorf("snapshot reads %v, want one per binding", calls)
	}
	got, _ := json.Marshal(contexts)
	want := `[{"binding":"a","type":"Group","groupName":"g","snapshots":{"a":[],"b":[{"filterResult":1}]}},` +
		`{"binding":"tick","type":"Schedule","snapshots":{"b":[{"filterResult":1}]}},` +
		`{"binding":"c","type":"Event","watchEvent":"Added","object":{"k":1}}]`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
