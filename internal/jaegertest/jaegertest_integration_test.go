package jaegertest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/jaegertest"
)

// TestIntegrationJaegerStoresWhatOTLPSends exports a small trace as the
// operator does (the OTel SDK, OTLP over gRPC without TLS, a Bearer token)
// and reads it back: the parent, a link with its attribute, attributes
// and an error status arrive as sent. A second Jaeger runs beside the
// first and holds nothing of it, and a span posted as OTLP JSON reaches
// the HTTP receiver.
func TestIntegrationJaegerStoresWhatOTLPSends(t *testing.T) {
	j := jaegertest.Start(t)
	other := jaegertest.Start(t)
	ctx := context.Background()
	service := fmt.Sprintf("jaegertest-%d", time.Now().UnixNano())

	exp, err := otlptracegrpc.New(ctx,
		otlptracegrpc.WithEndpoint(j.OTLPEndpoint),
		otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithHeaders(map[string]string{"Authorization": "Bearer not-checked"}))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	tracer := tp.Tracer("jaegertest")

	// The event that caused the run: a trace of its own the run links to.
	_, event := tracer.Start(ctx, "event")
	event.End()
	parentCtx, parent := tracer.Start(ctx, "reconcile",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("hook.name", "greet.sh"), attribute.Int("hook.binding_contexts", 3), attribute.Bool("hook.resident", false)))
	_, child := tracer.Start(parentCtx, "run",
		trace.WithLinks(trace.Link{SpanContext: event.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("link.reason", "caused by")}}))
	child.SetStatus(codes.Error, "hook exited with 1")
	child.End()
	parent.End()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("shut the exporter down: %v", err)
	}

	traceID := parent.SpanContext().TraceID().String()
	got := j.WaitTrace(t, ctx, service, func(tr jaegertest.Trace) bool {
		return tr.ID == traceID && len(tr.Spans) == 2
	}, 30*time.Second)
	byID, err := j.Trace(ctx, traceID)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID.Spans) != 2 {
		t.Fatalf("Trace(%s) has %d spans, want 2: %+v", traceID, len(byID.Spans), byID.Spans)
	}

	p, c := got.Span("reconcile"), got.Span("run")
	if p == nil || c == nil {
		t.Fatalf("trace %s lacks reconcile or run: %+v", traceID, got.Spans)
	}
	if p.SpanID != parent.SpanContext().SpanID().String() || p.ParentSpanID != "" || p.Service != service || p.Kind != "server" {
		t.Errorf("reconcile = %+v, want span %s, a root, of %s, kind server", p, parent.SpanContext().SpanID(), service)
	}
	if c.ParentSpanID != p.SpanID || c.TraceID != traceID || c.Kind != "internal" {
		t.Errorf("run: parent %q trace %q kind %q, want parent %q trace %q kind internal", c.ParentSpanID, c.TraceID, c.Kind, p.SpanID, traceID)
	}
	for k, want := range map[string]string{"hook.name": "greet.sh", "hook.binding_contexts": "3", "hook.resident": "false"} {
		if p.Attributes[k] != want {
			t.Errorf("reconcile's attribute %s = %q, want %q (all: %v)", k, p.Attributes[k], want, p.Attributes)
		}
	}
	if p.StatusError || !c.StatusError || c.StatusMessage != "hook exited with 1" {
		t.Errorf("status: reconcile error=%v; run error=%v %q, want false; true \"hook exited with 1\"", p.StatusError, c.StatusError, c.StatusMessage)
	}
	wantLink := jaegertest.SpanRef{TraceID: event.SpanContext().TraceID().String(), SpanID: event.SpanContext().SpanID().String()}
	if len(c.Links) != 1 || c.Links[0].TraceID != wantLink.TraceID || c.Links[0].SpanID != wantLink.SpanID || c.Links[0].Attributes["link.reason"] != "caused by" {
		t.Errorf("run's links = %+v, want one to %s/%s with link.reason \"caused by\"", c.Links, wantLink.TraceID, wantLink.SpanID)
	}
	if p.Start.IsZero() || p.Duration <= 0 || c.Start.Before(p.Start) || time.Since(p.Start) > time.Minute {
		t.Errorf("times: reconcile at %s for %s, run at %s", p.Start, p.Duration, c.Start)
	}

	all, err := j.Traces(ctx, service)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Span("event") == nil || all[1].ID != traceID {
		t.Errorf("Traces(%s) = %d traces, want the event's, then the run's: %+v", service, len(all), all)
	}
	if _, err := j.Trace(ctx, strings.Repeat("ab", 16)); err == nil {
		t.Errorf("Trace of an unknown ID: no error")
	}
	if none, err := other.Traces(ctx, service); err != nil || len(none) != 0 {
		t.Errorf("the second Jaeger holds %d traces of %s (%v), want none", len(none), service, err)
	}

	postOTLPJSON(t, j.OTLPHTTPEndpoint, service+"-http")
	j.WaitTrace(t, ctx, service+"-http", func(tr jaegertest.Trace) bool { return tr.Span("posted") != nil }, 30*time.Second)
}

// postOTLPJSON sends one span to the OTLP/HTTP receiver, in OTLP's JSON.
func postOTLPJSON(t *testing.T, endpoint, service string) {
	t.Helper()
	now := time.Now().UnixNano()
	body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},
"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"posted","kind":1,
"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`, service, now, now+int64(time.Millisecond))
	resp, err := http.Post("http://"+endpoint+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/traces: %s", resp.Status)
	}
}
