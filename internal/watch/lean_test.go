package watch

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/jq"
)

var leanLines = []string{
	`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b-1","namespace":"ns","uid":"u-1","resourceVersion":"12","creationTimestamp":"2026-11-25T23:55:43Z","labels":{"a":"b"},"managedFields":[{"manager":"m","fieldsV1":{"f:data":{".":{},"f:v":{}}}}]},"data":{"v":"x","n":"1"}}}`,
	`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"13","deletionTimestamp":"2026-11-25T23:55:43Z","finalizers":["a/b"],"annotations":{"x":"\u003cy\u003e"}},"spec":{"replicas":3,"f":1.5e3,"neg":-0.25,"list":[],"nested":[[1,{"k":null}],true,false],"esc":"a\"b\\c\nd"},"status":{"phase":"Running"}}}`,
	`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
	`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}`,
	`{"object":{"kind":"ConfigMap","metadata":{"name":"late-type"},"data":{"a":"b"}},"type":"ADDED"}`,
	`  {"type":"DELETED","object":{"metadata":{"name":"ws","namespace":null},"data":{"we\u0069rd key":1}}}  `,
	`{"type":"ADDED","object":{"metadata":{"name":"big"},"data":{"n":12345678901234567890}}}`,
}

// decodeLeanEvent decodes one line as a stream's reader does, with a key
// table of its own.
func decodeLeanEvent(line []byte, keep leanKeep) (event, error) {
	var keys keyTable
	return keys.decodeEvent(line, keep)
}

// full decodes a line as the stream did before lean decoding.
func full(t testing.TB, line string) (event, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var e event
	if err := dec.Decode(&e); err != nil {
		return e, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return e, false // more than one value: not one event
	}
	return e, true
}

// restrict is what a lean decode keeps of a fully decoded object: all of
// it for a nil keep.
func restrict(o map[string]any, keep leanKeep) map[string]any {
	if o == nil || keep == nil {
		return o
	}
	out := map[string]any{}
	for k, v := range o {
		switch {
		case keep[k] || k == "apiVersion" || k == "kind":
			out[k] = v
		case k == "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			m := map[string]any{}
			for mk, mv := range md {
				switch mk {
				case "name", "namespace", "uid", "resourceVersion", "deletionTimestamp":
					if mv != nil {
						m[mk] = mv
					}
				case "finalizers", "annotations":
					m[mk] = mv
				}
			}
			out[k] = m
		}
	}
	return out
}

// checkLean: on a line encoding/json reads as one event, the lean decode
// gives the same type, and the object restricted to what lean decoding
// keeps, or (an ERROR's Status, or a line the lean parser gave up on) the
// whole object. With a nil keep, that is the whole object either way.
func checkLean(t *testing.T, line string, keep leanKeep) {
	t.Helper()
	want, ok := full(t, line)
	got, err := decodeLeanEvent([]byte(line), keep)
	if !ok {
		return // not valid JSON: lean decoding may still read it; it must not panic
	}
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if got.Type != want.Type {
		t.Errorf("%s: type %q, want %q", line, got.Type, want.Type)
	}
	lean := want.Type != "ERROR" && reflect.DeepEqual(got.Object, restrict(want.Object, keep))
	if !lean && !reflect.DeepEqual(got.Object, want.Object) {
		t.Errorf("%s\nlean:  %#v\nwant:  %#v\nor:    %#v", line, got.Object, restrict(want.Object, keep), want.Object)
	}
}

func TestLeanDecodeEvents(t *testing.T) {
	for _, line := range leanLines {
		checkLean(t, line, leanKeep{"data": true, "spec": true})
		checkLean(t, line, leanKeep{"metadata": true})
		checkLean(t, line, leanKeep{})
		checkLean(t, line, nil)
	}
	// The object is decoded in place when its type came first; a later
	// "type" that makes the event an ERROR still gets the whole Status.
	for _, keep := range []leanKeep{nil, {"data": true}} {
		checkLean(t, retyped, keep)
	}
	// Whole objects are parsed too, not given up on; nesting deeper than
	// encoding/json reads is given up on, and then refused as it refuses.
	for _, line := range slices.Concat(leanLines[:3], leanLines[4:]) {
		p := leanParser{b: []byte(line)}
		if _, err := p.objectValue(); err != nil || !p.end() {
			t.Errorf("%s: not parsed whole: %v", line, err)
		}
	}
	deep := `{"type":"ADDED","object":{"metadata":{"name":"deep"},"data":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}}`
	p := leanParser{b: []byte(deep)}
	if _, err := p.objectValue(); err == nil {
		t.Errorf("nesting of %d parsed; encoding/json refuses it", maxDepth+2)
	}
	if _, err := decodeLeanEvent([]byte(deep), nil); err == nil {
		t.Errorf("nesting of %d decoded; encoding/json refuses it", maxDepth+2)
	}
	// The lines of a Kubernetes stream are decoded lean, not given up on.
	for _, line := range slices.Concat(leanLines[:3], leanLines[4:]) {
		keep := leanKeep{"data": true, "spec": true}
		want, _ := full(t, line)
		if got, err := decodeLeanEvent([]byte(line), keep); err != nil || !reflect.DeepEqual(got.Object, restrict(want.Object, keep)) {
			t.Errorf("%s: not decoded lean: %#v (%v)", line, got.Object, err)
		}
	}
	// What lean decoding leaves out of an object it was given.
	e, err := decodeLeanEvent([]byte(leanLines[0]), leanKeep{"data": true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]any{"name": "b-1", "namespace": "ns", "uid": "u-1", "resourceVersion": "12"},
		"data":     map[string]any{"v": "x", "n": "1"}}
	if !reflect.DeepEqual(e.Object, want) {
		t.Errorf("lean object %#v, want %#v", e.Object, want)
	}
}

// retyped is an event whose type is given twice, the second time after
// its object.
const retyped = `{"type":"ADDED","object":{"kind":"Status","apiVersion":"v1","metadata":{"name":"x"},"status":"Failure","code":410},"type":"ERROR"}`

func FuzzLeanDecodeEvent(f *testing.F) {
	for _, l := range leanLines {
		f.Add(l)
	}
	f.Add(retyped)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") {
			return // one line is one event
		}
		checkLean(t, line, leanKeep{"data": true, "spec": true})
		checkLean(t, line, nil)
	})
}

// A stream's lines are read whole, however long, and blank lines are
// skipped; its end is io.EOF.
func TestLeanReaderLines(t *testing.T) {
	long := `{"type":"ADDED","object":{"metadata":{"name":"long"},"data":{"v":"` + strings.Repeat("x", 200<<10) + `"}}}`
	stream := leanLines[0] + "\n\n" + long + "\n" + leanLines[2] // the last without its newline
	r := newLeanReader(bytes.NewReader([]byte(stream)), leanKeep{"data": true})
	var names []any
	for {
		e, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		md, _ := e.Object["metadata"].(map[string]any)
		names = append(names, md["name"])
	}
	if !reflect.DeepEqual(names, []any{"b-1", "long", nil}) {
		t.Errorf("names %v", names)
	}
}

// BenchmarkDecodeStream compares decoding a stream of ConfigMap events
// with encoding/json (as full objects were decoded before the line
// parser), whole with the line parser, and lean for a .data filter.
func BenchmarkDecodeStream(b *testing.B) {
	var buf bytes.Buffer
	for i := range 10000 {
		buf.WriteString(strings.Replace(leanLines[0], `"b-1"`, `"b-`+strings.Repeat("0", 5)+string(rune('0'+i%10))+`"`, 1) + "\n")
	}
	data := buf.Bytes()
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			for {
				var e event
				if dec.Decode(&e) != nil {
					break
				}
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			r := newLeanReader(bytes.NewReader(data), nil)
			for {
				if _, err := r.next(); err != nil {
					break
				}
			}
		}
	})
	b.Run("lean", func(b *testing.B) {
		for b.Loop() {
			r := newLeanReader(bytes.NewReader(data), leanKeep{"data": true})
			for {
				if _, err := r.next(); err != nil {
					break
				}
			}
		}
	})
}

func TestLeanKeysOfBindings(t *testing.T) {
	binding := func(filter string, keepFull bool) *Binding {
		cfg := &hook.KubernetesBinding{Common: hook.Common{Name: "b"}, KeepFullObjectsInMemory: keepFull}
		if filter != "" {
			f, err := jq.Compile(filter)
			if err != nil {
				t.Fatal(err)
			}
			cfg.JQFilter, cfg.Filter = filter, f
		}
		return &Binding{cfg: cfg}
	}
	for _, c := range []struct {
		name     string
		bindings []*Binding
		keepFull bool
		want     leanKeep
	}{
		{"one filter", []*Binding{binding(".data", false)}, false, leanKeep{"data": true}},
		{"keys of every binding", []*Binding{binding(".data", false), binding("{p: .status.phase, n: .metadata.name}", false)}, false,
			leanKeep{"data": true, "status": true, "metadata": true}},
		{"full objects kept", []*Binding{binding(".data", true)}, true, nil},
		{"a filter of the whole object", []*Binding{binding(".data", false), binding("keys", false)}, false, nil},
	} {
		if got := leanKeys(c.bindings, c.keepFull); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
