package binding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func obj(ns, name string, full bool, filter string) Object {
	o := Object{Namespace: ns, Name: name}
	if full {
		o.Raw = json.RawMessage(`{"metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`)
	}
	if filter != "" {
		o.FilterResult = json.RawMessage(filter)
	}
	return o
}

func TestEncodeShapes(t *testing.T) {
	tests := []struct {
		name string
		ctx  Context
		want string
	}{
		{"onStartup", Context{Binding: OnStartup}, `{"binding":"onStartup"}`},
		{"schedule", Context{Binding: "every-minute", Type: TypeSchedule}, `{"binding":"every-minute","type":"Schedule"}`},
		{"empty sync", Context{Binding: "pods", Type: TypeSynchronization}, `{"binding":"pods","type":"Synchronization","objects":[]}`},
		{"sync full and filter", Context{Binding: "pods", Type: TypeSynchronization, Objects: []Object{obj("a", "p", true, `{"x":1}`)}},
			`{"binding":"pods","type":"Synchronization","objects":[{"object":{"metadata":{"name":"p","namespace":"a"}},"filterResult":{"x":1}}]}`},
		{"sync filter only", Context{Binding: "pods", Type: TypeSynchronization, Objects: []Object{obj("a", "p", false, `null`)}},
			`{"binding":"pods","type":"Synchronization","objects":[{"filterResult":null}]}`},
		{"event no filter", Context{Binding: "pods", Type: TypeEvent, WatchEvent: "Added", Object: ptr(obj("a", "p", true, ""))},
			`{"binding":"pods","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"p","namespace":"a"}}}`},
		{"event filter only", Context{Binding: "pods", Type: TypeEvent, WatchEvent: "Deleted", Object: ptr(obj("a", "p", false, `"v"`))},
			`{"binding":"pods","type":"Event","watchEvent":"Deleted","filterResult":"v"}`},
		{"group", Context{Binding: "pods", Type: TypeGroup, GroupName: "g", Snapshots: map[string][]Object{
			"pods": {obj("a", "p", false, `1`)}, "cms": {},
		}}, `{"binding":"pods","type":"Group","groupName":"g","snapshots":{"cms":[],"pods":[{"filterResult":1}]}}`},
		{"schedule with snapshots", Context{Binding: "tick", Type: TypeSchedule, Snapshots: map[string][]Object{"pods": nil}},
			`{"binding":"tick","type":"Schedule","snapshots":{"pods":[]}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.ctx)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON", tt.name)
		}
	}
	// The file ends with a newline, as shell-operator v1.20's does.
	arr, err := Encode(nil)
	if err != nil || string(arr) != "[]\n" {
		t.Errorf("Encode(nil) = %s, %v", arr, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestCombineCollapsesConsecutiveGroups(t *testing.T) {
	in := []Context{
		{Binding: "a", Type: TypeGroup, GroupName: "g", WatchEvent: "1"},
		{Binding: "b", Type: TypeGroup, GroupName: "g", WatchEvent: "2"},
		{Binding: "c", Type: TypeEvent, WatchEvent: "Added"},
		{Binding: "a", Type: TypeGroup, GroupName: "g", WatchEvent: "3"},
		{Binding: "a", Type: TypeGroup, GroupName: "h", WatchEvent: "4"},
		{Binding: "a", Type: TypeGroup, GroupName: "h", WatchEvent: "5"},
	}
	out := Combine(in)
	var got []string
	for _, c := range out {
		got = append(got, c.Binding+c.GroupName+c.WatchEvent)
	}
	want := []string{"bg2", "cAdded", "ag3", "ah5"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestSortObjects(t *testing.T) {
	objs := []Object{{Namespace: "b", Name: "a"}, {Namespace: "a", Name: "z"}, {Namespace: "a", Name: "b"}, {Name: "c"}}
	SortObjects(objs)
	var got string
	for _, o := range objs {
		got += o.Namespace + "/" + o.Name + " "
	}
	if got != "/c a/b a/z b/a " {
		t.Errorf("order %q", got)
	}
}

// Validating and Mutating contexts carry the review as sent, compacted; a
// review that is not JSON is an error rather than a broken file.
func TestAdmissionContext(t *testing.T) {
	data, err := Encode([]Context{{Binding: "v.example.com", Type: TypeValidating, Review: []byte("{\"kind\": \"AdmissionReview\",\n \"request\": {\"uid\": \"u\"}}")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"binding":"v.example.com","type":"Validating","review":{"kind":"AdmissionReview","request":{"uid":"u"}}}]` + "\n"
	if string(data) != want {
		t.Errorf("got %s\nwant %s", data, want)
	}
	if _, err := Encode([]Context{{Binding: "m", Type: TypeMutating, Review: []byte("{")}}); err == nil {
		t.Error("a review that is not JSON must fail to encode")
	}
}

// BenchmarkEncode writes a burst run's contexts: 40 events of ConfigMaps
// with a filter result, as Encode does and as json.Marshal did before.
func BenchmarkEncode(b *testing.B) {
	raw := []byte(`{"apiVersion":"v1","data":{"key":"value-0123456789"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-26T05:00:00Z","managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{}}},"manager":"bench","operation":"Update","time":"2026-11-26T05:00:00Z"}],"name":"b-00001","namespace":"bench-burst","resourceVersion":"123456","uid":"0f7a1d9e-2f0c-4bb4-9a55-3b6f1e4d2c11"}}`)
	contexts := make([]Context, 40)
	for i := range contexts {
		contexts[i] = Context{Binding: "configmaps", Type: TypeEvent, WatchEvent: "Added",
			Object: &Object{Namespace: "bench-burst", Name: "b-00001", Raw: raw, FilterResult: []byte(`{"key":"value-0123456789"}`)}}
	}
	for _, c := range []struct {
		name   string
		encode func([]Context) ([]byte, error)
	}{{"Encode", Encode}, {"json.Marshal", func(cs []Context) ([]byte, error) { return json.Marshal(cs) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(contexts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Encode sizes its buffer once: a Synchronization of many objects is
// written without the buffer growing (and copying) as it fills, which was
// the largest part of the start-up memory peak.
func TestEncodeSizesItsBufferOnce(t *testing.T) {
	objects := make([]Object, 20000)
	for i := range objects {
		objects[i] = obj("ns", fmt.Sprintf("cm-%06d", i), true, `{"name":"x","value":"small"}`)
	}
	contexts := []Context{{Binding: "cms", Type: TypeSynchronization, Objects: objects}}
	data, err := Encode(contexts)
	if err != nil {
		t.Fatal(err)
	}
	if hint := sizeHint(contexts); len(data) > hint {
		t.Fatalf("Encode wrote %d bytes, more than sizeHint's %d", len(data), hint)
	}
	// Bytes, not allocations, are counted: the count of small allocations
	// varies from call to call (6 to 20 for the same call: json.Marshal's
	// pooled encoders are dropped at each GC, and at random under -race),
	// while the bytes are the buffer's. A buffer that grows as it fills allocates every size it
	// passes through, about twice what it ends at; one sized once
	// allocates sizeHint's bytes and a little more.
	var before, after runtime.MemStats
	const runs = 3
	runtime.ReadMemStats(&before)
	for range runs {
		_, _ = Encode(contexts)
	}
	runtime.ReadMemStats(&after)
	perRun := (after.TotalAlloc - before.TotalAlloc) / runs
	hint := uint64(sizeHint(contexts))
	if limit := hint + hint/4 + 64<<10; perRun > limit {
		t.Errorf("Encode allocated %d bytes for one Synchronization of %d objects (%d bytes of JSON, sizeHint %d), want at most %d: its buffer grew as it filled",
			perRun, len(objects), len(data), hint, limit)
	}
}

// sizeHint is at least what Encode writes for every shape of context.
func TestSizeHintCoversEveryShape(t *testing.T) {
	o := obj("a", "p", true, `{"x":1}`)
	review := json.RawMessage(`{"request":{"uid":"1","object":{"metadata":{"name":"p"}}}}`)
	for _, c := range []Context{
		{Binding: OnStartup},
		{Binding: "pods", Type: TypeSynchronization, Objects: []Object{o, o}},
		{Binding: "pods", Type: TypeEvent, WatchEvent: "Added", Object: &o},
		{Binding: "pods", Type: TypeGroup, GroupName: "g", Snapshots: map[string][]Object{"pods": {o}, "cms": nil}},
		{Binding: "check", Type: TypeValidating, Review: review},
		{Binding: "convert", Type: TypeConversion, FromVersion: "v1", ToVersion: "v2", Review: review},
	} {
		data, err := Encode([]Context{c, c})
		if err != nil {
			t.Fatal(err)
		}
		if hint := sizeHint([]Context{c, c}); len(data) > hint {
			t.Errorf("%s context: Encode wrote %d bytes, sizeHint said %d", c.Type, len(data), hint)
		}
	}
}

// Write writes what Encode returns, for every shape of context, and its
// writer's error comes back.
func TestWriteMatchesEncode(t *testing.T) {
	o := obj("a", "p", true, `{"x":1}`)
	many := make([]Object, 5000) // more than Write's buffer holds
	for i := range many {
		many[i] = obj("ns", fmt.Sprintf("cm-%06d", i), true, `{"name":"x"}`)
	}
	contexts := []Context{
		{Binding: OnStartup},
		{Binding: "pods", Type: TypeSynchronization, Objects: many},
		{Binding: "pods", Type: TypeEvent, WatchEvent: "Added", Object: &o},
		{Binding: "pods", Type: TypeGroup, GroupName: "g", Snapshots: map[string][]Object{"pods": {o}, "cms": nil}},
		{Binding: "check", Type: TypeValidating, Review: json.RawMessage(`{ "request" : {"uid":"1"} }`)},
	}
	want, err := Encode(contexts)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, contexts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("Write wrote %d bytes that differ from Encode's %d", got.Len(), len(want))
	}
	if err := Write(failingWriter{}, contexts); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Write to a failing writer: %v, want its error", err)
	}
	bad := []Context{{Binding: "check", Type: TypeValidating, Review: json.RawMessage(`{`)}}
	if err := Write(&got, bad); err == nil || !strings.Contains(err.Error(), "binding check") {
		t.Fatalf("Write of a review that is not JSON: %v, want an error naming the binding", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A bash hook that reads the file with read under set -e gets the whole
// array (read fails at the end of a file without a final newline), as on
// shell-operator v1.20.
func TestContextFileReadWithRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, []Context{{Binding: OnStartup}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("bash", "-c", `set -e; read -r ctx <"$1"; printf %s "$ctx"`, "bash", path).CombinedOutput()
	if err != nil || string(out) != `[{"binding":"onStartup"}]` {
		t.Errorf("read -r under set -e: %q, %v", out, err)
	}
}
