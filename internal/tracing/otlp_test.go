package tracing

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/protobuf/proto"
)

// recorded makes two spans, a parent and its child, with every kind of
// attribute, an event, a link and an error status, and returns what the
// SDK hands an exporter.
func recorded(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "hook-operator"), attribute.String("k8s.pod.name", "op-0"))
	p := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	tr := p.Tracer(Scope)
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	start := time.Unix(1733550000, 123)
	ctx, parent := tr.Start(context.Background(), SpanRun, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("hook.link", "merged")}}),
		trace.WithAttributes(attribute.String("s", "ünïcode"), attribute.Int64("i", -7), attribute.Bool("b", true), attribute.Bool("f", false),
			attribute.Float64("d", 2.5), attribute.StringSlice("ss", []string{"a", ""}), attribute.Int64Slice("is", []int64{1, -2}),
			attribute.BoolSlice("bs", []bool{true, false}), attribute.Float64Slice("ds", []float64{0.5})))
	_, child := tr.Start(ctx, SpanOperation, trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithSpanKind(trace.SpanKindClient))
	child.AddEvent("retry", trace.WithTimestamp(start.Add(2*time.Millisecond)), trace.WithAttributes(attribute.Int("attempt", 2)))
	child.SetStatus(codes.Error, "conflict")
	child.End(trace.WithTimestamp(start.Add(3 * time.Millisecond)))
	parent.SetStatus(codes.Ok, "")
	parent.End(trace.WithTimestamp(start.Add(4 * time.Millisecond)))
	return rec.Ended()
}

// The request the exporter encodes is OTLP's: OpenTelemetry's own Go
// types read every field back.
func TestEncodeRequestIsOTLP(t *testing.T) {
	spans := recorded(t)
	var req coltracepb.ExportTraceServiceRequest
	var b pb
	encodeRequest(&b, spans)
	if err := proto.Unmarshal(b.buf, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("groups: %v", &req)
	}
	rs := req.ResourceSpans[0]
	if got := attrs(rs.Resource.Attributes); got["service.name"] != "hook-operator" || got["k8s.pod.name"] != "op-0" {
		t.Errorf("resource = %v", got)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != Scope || len(ss.Spans) != 2 {
		t.Fatalf("scope %q, %d spans", ss.Scope.Name, len(ss.Spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range ss.Spans {
		byName[s.Name] = s
	}
	for i, want := range spans {
		got := byName[want.Name()]
		if got == nil {
			t.Fatalf("span %q missing", want.Name())
		}
		sc := want.SpanContext()
		if hex.EncodeToString(got.TraceId) != sc.TraceID().String() || hex.EncodeToString(got.SpanId) != sc.SpanID().String() {
			t.Errorf("span %d ids %x/%x, want %s/%s", i, got.TraceId, got.SpanId, sc.TraceID(), sc.SpanID())
		}
		if want.Parent().IsValid() != (len(got.ParentSpanId) == 8) || want.Parent().IsValid() && hex.EncodeToString(got.ParentSpanId) != want.Parent().SpanID().String() {
			t.Errorf("span %q parent %x, want %v", want.Name(), got.ParentSpanId, want.Parent().SpanID())
		}
		if got.StartTimeUnixNano != uint64(want.StartTime().UnixNano()) || got.EndTimeUnixNano != uint64(want.EndTime().UnixNano()) {
			t.Errorf("span %q times %d..%d", want.Name(), got.StartTimeUnixNano, got.EndTimeUnixNano)
		}
		if int(got.Kind) != int(want.SpanKind()) {
			t.Errorf("span %q kind %v, want %v", want.Name(), got.Kind, want.SpanKind())
		}
		if got.Flags&0xff != uint32(sc.TraceFlags()) {
			t.Errorf("span %q flags %x", want.Name(), got.Flags)
		}
	}
	run, op := byName[SpanRun], byName[SpanOperation]
	a := attrs(run.Attributes)
	for k, v := range map[string]string{"s": "ünïcode", "i": "-7", "b": "true", "f": "false", "d": "2.5", "ss": "[a ]", "is": "[1 -2]", "bs": "[true false]", "ds": "[0.5]"} {
		if a[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, a[k], v)
		}
	}
	if run.Status.GetCode() != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("run status %v", run.Status)
	}
	if op.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || op.Status.GetMessage() != "conflict" {
		t.Errorf("operation status %v", op.Status)
	}
	if len(op.Events) != 1 || op.Events[0].Name != "retry" || attrs(op.Events[0].Attributes)["attempt"] != "2" {
		t.Errorf("events %v", op.Events)
	}
	if len(run.Links) != 1 || run.Links[0].TraceId[0] != 9 || run.Links[0].SpanId[0] != 8 || attrs(run.Links[0].Attributes)["hook.link"] != "merged" {
		t.Errorf("links %v", run.Links)
	}
}

// attrs renders OTLP attributes as strings, slices as [a b].
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	var str func(v *commonpb.AnyValue) string
	str = func(v *commonpb.AnyValue) string {
		switch x := v.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return x.StringValue
		case *commonpb.AnyValue_IntValue:
			return attribute.Int64Value(x.IntValue).Emit()
		case *commonpb.AnyValue_BoolValue:
			return attribute.BoolValue(x.BoolValue).Emit()
		case *commonpb.AnyValue_DoubleValue:
			return attribute.Float64Value(x.DoubleValue).Emit()
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range x.ArrayValue.Values {
				parts = append(parts, str(e))
			}
			return "[" + strings.Join(parts, " ") + "]"
		}
		return "?"
	}
	for _, kv := range kvs {
		out[kv.Key] = str(kv.Value)
	}
	return out
}

// receiver is an OTLP receiver for the exporter's tests, over gRPC (h2c)
// or HTTP: it records each request, and answers with the gRPC statuses
// or HTTP codes it is given, one per request, then success.
type receiver struct {
	grpc     bool
	mu       sync.Mutex
	answers  []int
	requests []*http.Request
	bodies   []*coltracepb.ExportTraceServiceRequest
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	answer := 0
	if len(rc.answers) > 0 {
		answer, rc.answers = rc.answers[0], rc.answers[1:]
	}
	rc.requests = append(rc.requests, r)
	if rc.grpc && len(body) >= 5 && binary.BigEndian.Uint32(body[1:5]) == uint32(len(body)-5) {
		body = body[5:]
	}
	var req coltracepb.ExportTraceServiceRequest
	if proto.Unmarshal(body, &req) == nil {
		rc.bodies = append(rc.bodies, &req)
	}
	rc.mu.Unlock()
	if !rc.grpc {
		if answer != 0 {
			w.WriteHeader(answer)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	_, _ = w.Write([]byte{0, 0, 0, 0, 0}) // an empty ExportTraceServiceResponse
	w.Header().Set("Grpc-Status", strconvItoa(answer))
	if answer != 0 {
		w.Header().Set("Grpc-Message", "try later")
	}
}

func strconvItoa(i int) string { return attribute.IntValue(i).Emit() }

// The exporter speaks OTLP/gRPC without TLS as shell-operator's
// TRACING_OTLP_ENDPOINT asks (h2c, the method's path, the framing, the
// Bearer token), retries while the receiver is unavailable, and gives up
// on other statuses.
func TestExporterGRPC(t *testing.T) {
	rc := &receiver{grpc: true, answers: []int{14, 0, 3}}
	srv := httptest.NewServer(h2c.NewHandler(rc, &http2.Server{}))
	t.Cleanup(srv.Close)
	s, err := FromEnv(strings.TrimPrefix(srv.URL, "http://"), env(map[string]string{EnvAuthToken: "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newExporter(*s.dest)
	spans := recorded(t)
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("export after one UNAVAILABLE: %v", err)
	}
	err = e.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "gRPC status 3") {
		t.Fatalf("export answered INVALID_ARGUMENT: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.requests) != 3 || len(rc.bodies) != 3 {
		t.Fatalf("%d requests, %d decoded", len(rc.requests), len(rc.bodies))
	}
	r := rc.requests[0]
	if r.URL.Path != grpcPath || r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc+proto" ||
		r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Te") != "trailers" {
		t.Errorf("request %s %s %v", r.Proto, r.URL.Path, r.Header)
	}
	if n := len(rc.bodies[1].ResourceSpans[0].ScopeSpans[0].Spans); n != 2 {
		t.Errorf("%d spans arrived", n)
	}
	if err := e.Shutdown(context.Background()); err != nil || e.ExportSpans(context.Background(), spans) == nil {
		t.Errorf("export after shutdown succeeded")
	}
}

// OTLP/HTTP, as the standard variables ask for it: /v1/traces under the
// endpoint, their headers, gzip.
func TestExporterHTTP(t *testing.T) {
	rc := &receiver{answers: []int{http.StatusServiceUnavailable}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	s, err := FromEnv("", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/otlp/", "OTEL_EXPORTER_OTLP_HEADERS": "X-Scope-OrgID=team%20a,api-key=k",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newExporter(*s.dest)
	if err := e.ExportSpans(context.Background(), recorded(t)); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.requests[len(rc.requests)-1]
	if len(rc.requests) != 2 || r.URL.Path != "/otlp/v1/traces" || r.Header.Get("X-Scope-Orgid") != "team a" || r.Header.Get("Api-Key") != "k" ||
		r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("%d requests; last %s %v", len(rc.requests), r.URL.Path, r.Header)
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// testTracer is a Tracer whose spans a recorder keeps.
func testTracer(t *testing.T) (*Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	p := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(idGenerator{}))
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return &Tracer{provider: p, tracer: p.Tracer(Scope)}, rec
}
