package tracing

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Off, what the operator calls on every event allocates nothing.
func TestOffAllocatesNothing(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	err := errors.New("failed")
	allocs := testing.AllocsPerRun(100, func() {
		if tr.On() {
			t.Fatal("a nil Tracer is on")
		}
		_ = tr.Root(SpanEvent, time.Time{})
		c, span := tr.Start(ctx, SpanRun)
		c, child := Child(c, SpanOperation)
		End(child, err)
		End(span, nil)
		_, _ = Headers(c)
	})
	if allocs != 0 {
		t.Errorf("%v allocations a call with tracing off", allocs)
	}
}

// Root returns the span context of a span already ended and exported.
func TestRootIsExported(t *testing.T) {
	tr, rec := testTracer(t)
	sc := tr.Root(SpanEvent, time.Now().Add(-time.Millisecond), attribute.String("hook.name", "h"))
	ended := rec.Ended()
	if !sc.IsValid() || len(ended) != 1 || !ended[0].SpanContext().Equal(sc) || ended[0].Parent().IsValid() {
		t.Fatalf("root %v, ended %v", sc, ended)
	}
}
