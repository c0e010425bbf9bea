package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/hookspan"
)

// A hook's spans are exported into the run's trace with the ids the hook
// gave them (what it passed on in its own traceparent headers names
// them), nested as it nested them, and not at all when the run was not
// sampled.
func TestExportHookSpans(t *testing.T) {
	tr, rec := testTracer(t)
	_, run := tr.Start(context.Background(), SpanProcess)
	sc := run.SpanContext()
	tid, sid := sc.TraceID().String(), sc.SpanID().String()
	data := `{"traceId":"` + tid + `","spanId":"00000000000000a1","parentSpanId":"` + sid + `","name":"outer","startTimeUnixNano":"1000","endTimeUnixNano":"5000","kind":3,"attributes":[{"key":"n","value":{"intValue":"7"}}]}
{"traceId":"` + tid + `","spanId":"00000000000000b2","parentSpanId":"00000000000000a1","name":"inner","startTimeUnixNano":"2000","endTimeUnixNano":"3000","status":{"code":2,"message":"boom"}}
`
	spans, err := hookspan.Parse([]byte(data), tid, sid)
	if err != nil {
		t.Fatal(err)
	}
	tr.ExportHookSpans(sc, "h", spans)
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans exported", len(ended))
	}
	outer, inner := ended[0], ended[1]
	if outer.Name() != "outer" || outer.SpanContext().SpanID().String() != "00000000000000a1" || outer.Parent().SpanID() != sc.SpanID() ||
		outer.SpanContext().TraceID() != sc.TraceID() || outer.SpanKind() != trace.SpanKindClient || outer.StartTime().UnixNano() != 1000 || outer.EndTime().UnixNano() != 5000 {
		t.Errorf("outer: %s %v parent %v kind %v %v..%v", outer.Name(), outer.SpanContext().SpanID(), outer.Parent().SpanID(), outer.SpanKind(), outer.StartTime(), outer.EndTime())
	}
	if inner.Parent().SpanID().String() != "00000000000000a1" || inner.Status().Description != "boom" {
		t.Errorf("inner: parent %v status %v", inner.Parent().SpanID(), inner.Status())
	}
	got := map[string]string{}
	for _, a := range outer.Attributes() {
		got[string(a.Key)] = a.Value.Emit()
	}
	if got["hook.name"] != "h" || got["n"] != "7" {
		t.Errorf("attributes %v", got)
	}

	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: sc.SpanID()})
	tr.ExportHookSpans(unsampled, "h", spans)
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("an unsampled run's hook spans were exported: %d spans", n)
	}
}
