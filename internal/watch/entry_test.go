package watch

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// benchObjects is the number of objects of the Synchronization that
// BenchmarkNewEntryAndEncode encodes, as in the 12k run of `make bench`.
const benchObjects = 12000

// configMapJSON is a ConfigMap as the API server returns the bench's
// objects (about 420 bytes).
func configMapJSON(i int) []byte {
	name := fmt.Sprintf("cm-%06d", i)
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"bench-sync","uid":"0b6f3c1e-5a7d-4c2b-9e8f-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-22T00:52:56Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-22T00:52:56Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:name":{},"f:value":{}}}}]},"data":{"name":%q,"value":"small"}}`,
		name, i, 100000+i, name)
}

// decodeUnstructured decodes an object as the informer's client does.
func decodeUnstructured(tb testing.TB, data []byte) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		tb.Fatal(err)
	}
	return u
}

// benchBinding is a binding without jqFilter, so that it keeps full objects.
func benchBinding() *Binding {
	h := &hook.Hook{Name: "bench.sh"}
	cfg := &hook.KubernetesBinding{Common: hook.Common{Name: "configmaps"}, KeepFullObjectsInMemory: true}
	return newBinding(h, cfg, newOutbox(nil), logrus.New())
}

// BenchmarkNewEntryAndEncode measures what the watch cache costs per object
// (heap-B/object: live heap after GC, the decoded objects being garbage as
// in the informer) and the time to encode a Synchronization context of
// benchObjects objects.
func BenchmarkNewEntryAndEncode(b *testing.B) {
	bnd := benchBinding()
	bindings := []*Binding{bnd}
	raw := make([][]byte, benchObjects)
	for i := range raw {
		raw[i] = configMapJSON(i)
	}

	b.Run("newEntry", func(b *testing.B) {
		i := 0
		for b.Loop() {
			newEntry(decodeUnstructured(b, raw[i%benchObjects]), bindings, true, false)
			i++
		}
	})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	entries := make([]*entry, benchObjects)
	for i := range entries {
		entries[i] = newEntry(decodeUnstructured(b, raw[i]), bindings, true, false)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(raw) // not garbage by the second reading
	heapPerObject := float64(after.HeapAlloc-before.HeapAlloc) / benchObjects

	src := &source{}
	objs := make([]binding.Object, len(entries))
	for i, e := range entries {
		objs[i] = bnd.object(src, e)
	}
	contexts := []binding.Context{{Binding: "configmaps", Type: binding.TypeSynchronization, Objects: objs}}

	b.Run("encode", func(b *testing.B) {
		var n int
		for b.Loop() {
			data, err := binding.Encode(contexts)
			if err != nil {
				b.Fatal(err)
			}
			n = len(data)
		}
		b.ReportMetric(heapPerObject, "heap-B/object")
		b.ReportMetric(float64(n), "context-B")
	})
	runtime.KeepAlive(entries)
}
