package executor

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/hookspan"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/tracing"
)

// startRun starts the span of a queued task's run under the task's root,
// after recording its wait in the queue (since it was queued, or since
// its last failed run ended). The roots of the tasks merged into it are
// the run's links. Off, it returns ctx and a span that records nothing.
func (e *Executor) startRun(ctx context.Context, t *queue.Task) (context.Context, trace.Span) {
	if !e.Tracer.On() {
		return ctx, trace.SpanFromContext(ctx)
	}
	now := time.Now()
	links, dropped := t.Links()
	_, wait := e.Tracer.StartUnder(ctx, t.Trace, tracing.SpanQueue, trace.WithTimestamp(now.Add(-t.Waited())),
		trace.WithAttributes(attribute.String("hook.name", t.Hook.Name), attribute.String("hook.queue", t.Queue),
			attribute.Int("hook.contexts", len(t.Contexts)), attribute.Int("hook.merged", len(links)+dropped), attribute.Int("hook.attempt", t.Attempts()+1)))
	wait.End(trace.WithTimestamp(now))
	opts := []trace.SpanStartOption{trace.WithTimestamp(now), trace.WithAttributes(
		attribute.String("hook.name", t.Hook.Name), attribute.String("hook.bindings", BindingNames(t.Contexts)),
		attribute.String("hook.queue", t.Queue), attribute.Int("hook.contexts", len(t.Contexts)),
		attribute.Int("hook.attempt", t.Attempts()+1), attribute.Int("hook.merged", len(links)+dropped))}
	if t.Key != "" {
		opts = append(opts, trace.WithAttributes(attribute.String("hook.key", t.Key)))
	}
	if t.Origin != "" {
		opts = append(opts, trace.WithAttributes(attribute.String("hook.origin", t.Origin)))
	}
	for _, l := range links {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: l, Attributes: []attribute.KeyValue{attribute.String("hook.link", "merged")}}))
	}
	return e.Tracer.StartUnder(ctx, t.Trace, tracing.SpanRun, opts...)
}

// runProcess runs the hook for req under a span of its own, whose trace
// context the hook gets (TRACEPARENT), and exports the spans the hook
// recorded under it: checked whole first, a bad file is logged once and
// none of its spans goes out, and the run is not failed for it.
func (e *Executor) runProcess(ctx context.Context, req run.Request) (run.Result, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return e.Runner.Run(ctx, req)
	}
	ctx, span := tracing.Child(ctx, tracing.SpanProcess, trace.WithAttributes(attribute.String("hook.name", req.Hook.Name),
		attribute.Bool("hook.resident", req.Hook.Config.Settings.Resident)))
	parent, state := tracing.Headers(ctx)
	req.Trace = &run.Trace{Parent: parent, State: state}
	res, err := e.Runner.Run(ctx, req)
	if res.Duration > 0 {
		span.SetAttributes(attribute.Int64("hook.user_cpu_us", res.UserCPU.Microseconds()),
			attribute.Int64("hook.system_cpu_us", res.SystemCPU.Microseconds()), attribute.Int64("hook.max_rss_bytes", res.MaxRSS))
	}
	e.exportHookSpans(span.SpanContext(), req.Hook, res)
	tracing.End(span, err)
	return res, err
}

func (e *Executor) exportHookSpans(sc trace.SpanContext, h *hook.Hook, res run.Result) {
	if res.SpansErr != nil {
		e.Log.WithField("hook", h.Name).WithError(res.SpansErr).Warn("the hook's spans ($TRACE_SPANS_PATH) could not be read; none of them is exported")
		return
	}
	if len(res.Spans) == 0 {
		return
	}
	spans, err := hookspan.Parse(res.Spans, sc.TraceID().String(), sc.SpanID().String())
	if err != nil {
		e.Log.WithField("hook", h.Name).WithError(err).Warn("the hook's spans ($TRACE_SPANS_PATH) are not valid; none of them is exported, the run goes on")
		return
	}
	e.Tracer.ExportHookSpans(sc, h.Name, spans)
}

// startOutput starts the span of checking what a hook wrote (and
// applying it: the operations' spans are its children).
func startOutput(ctx context.Context) (context.Context, trace.Span) {
	return tracing.Child(ctx, tracing.SpanOutput)
}

// traceFinalizer starts the span of removing a finalizer once its
// Finalize run succeeded.
func traceFinalizer(ctx context.Context, t finalizer.Target) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracing.Child(ctx, tracing.SpanFinalizer, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("k8s.object.resource", t.Resource.Resource), attribute.String("k8s.namespace.name", t.Namespace),
		attribute.String("k8s.object.name", t.Name), attribute.String("k8s.finalizer", t.Finalizer)))
}
