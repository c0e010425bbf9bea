package binding

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Binding contexts survive the trip through their JSON encoding: whatever
// the names and object bodies, Encode writes valid JSON that decodes to the
// same binding, type, event, objects and snapshots (a byte that is not
// UTF-8 comes back as U+FFFD, as encoding/json writes it).
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("pods", "Added", "ns", "a", []byte(`{"metadata":{"name":"a"}}`), []byte(`"web"`), "g")
	f.Add("q\"uote\\", "Deleted", "", "x\u2028y", []byte(`{"a":[1,2.5,null,true,"\u00e9"]}`), []byte(`null`), "")
	f.Add("\xff", "Modified", "n", "b", []byte(`123456789012345678901234567890`), []byte(`{}`), "<&>")
	f.Fuzz(func(t *testing.T, name, event, ns, objName string, raw, filter []byte, group string) {
		if !json.Valid(raw) || !json.Valid(filter) {
			return // objects reach contexts as JSON the watch made
		}
		obj := Object{Namespace: ns, Name: objName, Raw: raw, FilterResult: filter}
		contexts := []Context{
			{Binding: name, Type: TypeEvent, WatchEvent: event, Object: &obj},
			{Binding: name, Type: TypeSynchronization, Objects: []Object{obj, obj}},
			{Binding: group, Type: TypeGroup, GroupName: group, Snapshots: map[string][]Object{name: {obj}, "other": nil}},
		}
		data, err := Encode(contexts)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		var got []map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("Encode wrote invalid JSON: %v\n%s", err, data)
		}
		// encoding/json writes U+FFFD for each byte that is not UTF-8.
		valid := func(s string) string {
			var b strings.Builder
			for _, r := range s {
				b.WriteRune(r) // a bad byte ranges as utf8.RuneError, one per byte
			}
			return b.String()
		}
		var wantObj, wantFilter any
		_ = json.Unmarshal(raw, &wantObj)
		_ = json.Unmarshal(filter, &wantFilter)
		pair := map[string]any{"object": wantObj, "filterResult": wantFilter}
		if got[0]["binding"] != valid(name) || got[0]["type"] != TypeEvent || got[0]["watchEvent"] != valid(event) {
			t.Fatalf("event context %v", got[0])
		}
		if !reflect.DeepEqual(got[0]["object"], wantObj) || !reflect.DeepEqual(got[0]["filterResult"], wantFilter) {
			t.Fatalf("event object %v / %v, want %v / %v", got[0]["object"], got[0]["filterResult"], wantObj, wantFilter)
		}
		if objs, _ := got[1]["objects"].([]any); len(objs) != 2 || !reflect.DeepEqual(objs[0], pair) {
			t.Fatalf("synchronization objects %v, want two of %v", got[1]["objects"], pair)
		}
		if group != "" && got[2]["groupName"] != valid(group) {
			t.Fatalf("group context %v, want groupName %q", got[2], valid(group))
		}
		snaps, _ := got[2]["snapshots"].(map[string]any)
		want := map[string]any{}
		for n, objs := range contexts[2].Snapshots {
			list := []any{}
			for range objs {
				list = append(list, pair)
			}
			want[valid(n)] = list
		}
		if !reflect.DeepEqual(snaps, want) {
			t.Fatalf("snapshots %v, want %v", snaps, want)
		}
	})
}
