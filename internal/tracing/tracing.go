// Package tracing exports OpenTelemetry traces of the operator's work: a
// context's way from the watch event (or schedule tick, Synchronization,
// admission or conversion review) through its queue, the hook's run and
// the spans the hook records itself, to each operation applied. It is off
// unless an OTLP endpoint is configured (Settings); a nil *Tracer is off,
// and every method and helper here costs a nil check or one interface
// call, and allocates nothing, while it is.
//
// Span names are a fixed set (the Span* constants): objects, hooks and
// bindings are attributes, never names, so that a backend's list of
// operations stays short.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every span the operator makes.
const Scope = "github.com/hook-operator/hook-operator"

// The span names. A trace of a watch event is SpanEvent, with SpanQueue,
// then SpanRun (one per attempt) under it; SpanProcess, SpanOutput and
// SpanOperation under SpanRun; the hook's own spans under SpanProcess.
const (
	SpanEvent           = "watch event"
	SpanSynchronization = "synchronization"
	SpanSchedule        = "schedule"
	SpanStartup         = "onStartup"
	SpanTrigger         = "trigger"
	SpanRequeue         = "requeue"
	SpanQueue           = "queue wait"
	SpanRun             = "hook run"
	SpanProcess         = "hook process"
	SpanOutput          = "hook output"
	SpanOperation       = "operation"
	SpanFinalizer       = "remove finalizer"
	SpanAdmission       = "admission review"
	SpanConversion      = "conversion review"
)

// Resource says which operator the traces come from.
type Resource struct {
	Version   string
	Pod       string
	Namespace string
}

// Tracer makes the operator's spans. nil is tracing off.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// New starts exporting to where s says. The exporter connects lazily: an
// unreachable collector is reported by the log (errors from the
// exporter, at most one line a minute) and never holds a run up: spans
// wait in a bounded queue and are dropped when it is full.
func New(ctx context.Context, s Settings, res Resource, log logrus.FieldLogger) (*Tracer, error) {
	if !s.On() {
		return nil, nil
	}
	exp, err := newExporter(*s.dest)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", s.ServiceName),
		attribute.String("service.version", res.Version),
	}
	if res.Pod != "" {
		attrs = append(attrs, attribute.String("k8s.pod.name", res.Pod))
	}
	if res.Namespace != "" {
		attrs = append(attrs, attribute.String("k8s.namespace.name", res.Namespace))
	}
	// OTEL_RESOURCE_ATTRIBUTES first, ours after: OTEL_SERVICE_NAME is
	// already in s.ServiceName.
	r, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil && r == nil {
		return nil, fmt.Errorf("tracing: the resource attributes (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	otel.SetErrorHandler(&errorLog{log: log})
	p := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(r),
		sdktrace.WithSampler(s.Sampler),
		sdktrace.WithIDGenerator(idGenerator{}),
	)
	return &Tracer{provider: p, tracer: p.Tracer(Scope)}, nil
}

// On reports whether t makes spans.
func (t *Tracer) On() bool { return t != nil }

// Shutdown exports what is pending, within ctx, and stops t.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Start starts a span under ctx's span or span context. Off, it returns
// ctx and a span that records nothing.
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, opts...)
}

// StartUnder starts a span whose parent is parent (a span context kept
// from elsewhere: a queued task's), or a root span when parent is not
// valid.
func (t *Tracer) StartUnder(ctx context.Context, parent trace.SpanContext, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	if parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	return t.tracer.Start(ctx, name, opts...)
}

// Root records the root span of a queued context, which began at start
// and ends now, and returns its span context for the task to carry.
func (t *Tracer) Root(name string, start time.Time, attrs ...attribute.KeyValue) trace.SpanContext {
	if t == nil {
		return trace.SpanContext{}
	}
	_, span := t.tracer.Start(context.Background(), name, trace.WithNewRoot(), trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	sc := span.SpanContext()
	span.End()
	return sc
}

// Child starts a span under ctx's span when that one records, and
// otherwise returns ctx and ctx's span, allocating nothing: code that is
// handed a context (applying operations, removing finalizers) makes its
// spans with it and needs no Tracer.
func Child(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}

// End ends span with err's status: an error sets the status Error with
// err's message, cut to 1 KiB.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, cut(err.Error(), 1024))
	}
	span.End()
}

// Headers returns the W3C traceparent (and tracestate, when set) of ctx's
// span, or "" when there is none.
func Headers(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// Extract returns ctx with the span context of a W3C traceparent and
// tracestate (an API server's request headers), or ctx when traceparent
// is empty or not valid.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 { // not inside a UTF-8 sequence
		n--
	}
	return s[:n] + "…"
}

// idGenerator makes random ids, or, for a span a hook recorded (see
// ExportHookSpans), the id the hook gave it: what the hook passed on in
// its own traceparent headers must name the span exported.
type idGenerator struct{}

type presetKey struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		hi, lo := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			tid[i], tid[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
		}
	}
	return tid, idGenerator{}.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if id, ok := ctx.Value(presetKey{}).(trace.SpanID); ok && id.IsValid() {
		return id
	}
	var sid trace.SpanID
	for !sid.IsValid() {
		v := rand.Uint64()
		for i := range 8 {
			sid[i] = byte(v >> (56 - 8*i))
		}
	}
	return sid
}

// errorLog logs the exporter's errors, at most one line a minute with a
// count of those left out: a collector that is down must not flood the
// log.
type errorLog struct {
	log     logrus.FieldLogger
	mu      sync.Mutex
	last    time.Time
	skipped int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := time.Now(); now.Sub(e.last) >= time.Minute {
		entry := e.log.WithError(errors.New(cut(err.Error(), 512)))
		if e.skipped > 0 {
			entry = entry.WithField("suppressed", e.skipped)
		}
		entry.Warn("tracing: exporting spans failed; they are dropped until the collector answers (one line a minute)")
		e.last, e.skipped = now, 0
		return
	}
	e.skipped++
}
