package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/hookspan"
)

// ExportHookSpans exports the spans a hook recorded in $TRACE_SPANS_PATH
// (parsed and checked whole by hookspan.Parse, parents first) into the
// trace of run, the span the hook's TRACEPARENT named, each with the id
// the hook gave it and hook.name set. Nothing is exported when run was
// not sampled.
func (t *Tracer) ExportHookSpans(run trace.SpanContext, hookName string, spans []hookspan.Span) {
	if t == nil || !run.IsSampled() {
		return
	}
	for _, s := range spans {
		parent := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: s.TraceID, SpanID: s.ParentSpanID, TraceFlags: run.TraceFlags(), TraceState: run.TraceState(), Remote: true,
		})
		ctx := trace.ContextWithRemoteSpanContext(context.WithValue(context.Background(), presetKey{}, trace.SpanID(s.SpanID)), parent)
		attrs := make([]attribute.KeyValue, 0, len(s.Attributes)+1)
		attrs = append(attrs, attribute.String("hook.name", hookName))
		for _, a := range s.Attributes {
			switch v := a.Value.(type) {
			case string:
				attrs = append(attrs, attribute.String(a.Key, v))
			case int64:
				attrs = append(attrs, attribute.Int64(a.Key, v))
			case bool:
				attrs = append(attrs, attribute.Bool(a.Key, v))
			case float64:
				attrs = append(attrs, attribute.Float64(a.Key, v))
			}
		}
		_, span := t.tracer.Start(ctx, s.Name, trace.WithTimestamp(s.Start), trace.WithSpanKind(trace.SpanKind(s.Kind)), trace.WithAttributes(attrs...))
		switch s.StatusCode {
		case hookspan.StatusOK:
			span.SetStatus(codes.Ok, "")
		case hookspan.StatusError:
			span.SetStatus(codes.Error, s.StatusMessage)
		}
		span.End(trace.WithTimestamp(s.End))
	}
}
