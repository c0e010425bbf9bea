package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// BenchmarkRootExported is what the operator spends on one watch event's
// root span with tracing on: made, ended, batched, encoded and sent over
// OTLP/gRPC to a receiver that discards it.
func BenchmarkRootExported(b *testing.B) {
	srv := httptest.NewServer(h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", "Grpc-Status")
		_, _ = w.Write([]byte{0, 0, 0, 0, 0})
		w.Header().Set("Grpc-Status", "0")
	}), &http2.Server{}))
	b.Cleanup(srv.Close)
	s, err := FromEnv(strings.TrimPrefix(srv.URL, "http://"), env(nil))
	if err != nil {
		b.Fatal(err)
	}
	e, _ := newExporter(*s.dest)
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(e), sdktrace.WithSampler(s.Sampler), sdktrace.WithIDGenerator(idGenerator{}))
	tr := &Tracer{provider: p, tracer: p.Tracer(Scope)}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tr.Root(SpanEvent, time.Now(), attribute.String("hook.name", "hook.sh"), attribute.String("hook.binding", "cms"),
			attribute.String("hook.queue", "main"), attribute.String("hook.context_type", "Event"), attribute.String("k8s.event.type", "Added"),
			attribute.String("k8s.object.kind", "ConfigMap"), attribute.String("k8s.namespace.name", "default"), attribute.String("k8s.object.name", "cm-123"))
	}
	if err := p.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}
