package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/http2"
)

// exporter sends spans to an OTLP receiver: over gRPC (the TraceService's
// Export method, as OpenTelemetry's otlptracegrpc does) or over HTTP
// (POST /v1/traces), with the message in protobuf either way.
//
// It is the operator's own, and not OpenTelemetry's exporters, for the
// binary's sake: those link gRPC-Go and the protobuf runtime, 7.3 MB of an
// 18 MB binary that must stay within 5 MB of today whether tracing is on or
// off (docs/design/process.md, "Tracing"). The protocol is OTLP's, unchanged: the
// message is encoded field by field (otlp_encode.go, checked against
// OpenTelemetry's own Go types in its tests), and gRPC's framing is five bytes
// and two trailers over the HTTP/2 client the Kubernetes client already links.
// The SDK (spans, sampling, batching) is OpenTelemetry's.
type exporter struct {
	url     string
	grpc    bool
	headers http.Header
	gzip    bool
	timeout time.Duration
	client  *http.Client

	// buf is the last export's encoding, kept for the next one's.
	buf []byte

	mu       sync.Mutex
	shutdown bool
}

// grpcPath is the TraceService's Export method.
const grpcPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

func newExporter(d destination) (*exporter, error) {
	e := &exporter{url: d.url, grpc: d.grpc, headers: d.headers, gzip: d.gzip, timeout: d.timeout}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	switch {
	case d.grpc && d.tls == nil:
		// gRPC without TLS: HTTP/2 with prior knowledge (h2c).
		e.client = &http.Client{Transport: &http2.Transport{
			AllowHTTP: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				return dialer.DialContext(ctx, network, addr)
			},
			ReadIdleTimeout: 30 * time.Second,
		}}
	case d.grpc:
		e.client = &http.Client{Transport: &http2.Transport{TLSClientConfig: d.tls, ReadIdleTimeout: 30 * time.Second}}
	default:
		e.client = &http.Client{Transport: &http.Transport{
			DialContext: dialer.DialContext, TLSClientConfig: d.tls, ForceAttemptHTTP2: true,
			MaxIdleConns: 2, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		}}
	}
	return e, nil
}

// ExportSpans implements sdktrace.SpanExporter: one request, retried
// while the receiver is unavailable or throttles, within the timeout
// (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default).
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	e.mu.Lock()
	down := e.shutdown
	e.mu.Unlock()
	if down {
		return errors.New("the exporter is shut down")
	}
	// The SDK calls ExportSpans from one goroutine at a time, so one
	// buffer serves every export; gRPC's five-byte prefix is left room
	// for before the message.
	const prefix = 5
	b := pb{buf: append(e.buf[:0], make([]byte, prefix)...)}
	encodeRequest(&b, spans)
	e.buf = b.buf
	body := b.buf[prefix:]
	if e.gzip {
		var z bytes.Buffer
		z.Write(make([]byte, prefix))
		w := gzip.NewWriter(&z)
		_, _ = w.Write(body)
		_ = w.Close()
		b.buf = z.Bytes()
		body = b.buf[prefix:]
	}
	if e.grpc {
		if e.gzip {
			b.buf[0] = 1
		}
		binary.BigEndian.PutUint32(b.buf[1:prefix], uint32(len(body)))
		body = b.buf
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	backoff := 500 * time.Millisecond
	for {
		retry, err := e.send(ctx, body)
		if err == nil || !retry {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// send makes one request and says whether a failure may pass if tried
// again (the receiver unavailable, throttling, the connection lost).
func (e *exporter) send(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	if e.grpc {
		req.Header.Set("Content-Type", "application/grpc+proto")
		req.Header.Set("TE", "trailers")
		if e.gzip {
			req.Header.Set("Grpc-Encoding", "gzip")
		}
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		if e.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	req.Header.Set("User-Agent", "hook-operator OTLP exporter")
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("sending spans to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	// The answer (an ExportTraceServiceResponse, perhaps with a partial
	// success) is read for the trailers and the connection's reuse; what
	// it says beyond the status is not used.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if !e.grpc {
		switch {
		case resp.StatusCode/100 == 2:
			return false, nil
		case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
			resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
			return true, fmt.Errorf("%s answered %s", e.url, resp.Status)
		}
		return false, fmt.Errorf("%s answered %s", e.url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests,
			fmt.Errorf("%s answered HTTP %s (is it an OTLP/gRPC receiver? OTLP/HTTP's port is usually 4318, gRPC's 4317)", e.url, resp.Status)
	}
	status := resp.Trailer.Get("Grpc-Status")
	if status == "" {
		status = resp.Header.Get("Grpc-Status") // a trailers-only answer
	}
	code, _ := strconv.Atoi(status)
	if status == "" || code == 0 {
		return false, nil
	}
	msg := resp.Trailer.Get("Grpc-Message")
	if msg == "" {
		msg = resp.Header.Get("Grpc-Message")
	}
	// UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED, DEADLINE_EXCEEDED, as the
	// OTLP specification lists the retryable codes.
	retry = code == 14 || code == 8 || code == 10 || code == 4
	return retry, fmt.Errorf("%s answered gRPC status %d: %s", e.url, code, msg)
}

// Shutdown implements sdktrace.SpanExporter.
func (e *exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.shutdown = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return nil
}

// encodeRequest encodes an ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1) of spans, grouped by their
// resource and instrumentation scope.
func encodeRequest(b *pb, spans []sdktrace.ReadOnlySpan) {
	type group struct {
		res   *resource.Resource
		scope string
		spans []sdktrace.ReadOnlySpan
	}
	var groups []*group
	for _, s := range spans {
		sc := s.InstrumentationScope()
		key := sc.Name + "\x00" + sc.Version
		var g *group
		for _, x := range groups {
			if x.res == s.Resource() && x.scope == key {
				g = x
				break
			}
		}
		if g == nil {
			g = &group{res: s.Resource(), scope: key}
			groups = append(groups, g)
		}
		g.spans = append(g.spans, s)
	}
	for _, g := range groups {
		rs := b.begin(1) // resource_spans
		if g.res != nil {
			r := b.begin(1) // resource
			for _, kv := range g.res.Attributes() {
				b.keyValue(1, kv)
			}
			b.end(r)
			b.str(3, g.res.SchemaURL())
		}
		ss := b.begin(2) // scope_spans
		scope := g.spans[0].InstrumentationScope()
		sc := b.begin(1)
		b.str(1, scope.Name)
		b.str(2, scope.Version)
		b.end(sc)
		for _, s := range g.spans {
			b.span(2, s)
		}
		b.str(3, scope.SchemaURL)
		b.end(ss)
		b.end(rs)
	}
}

// pb appends protobuf's wire format. A message's length is written when
// it ends (end moves its bytes to make room), so nothing is encoded
// twice.
type pb struct{ buf []byte }

func (b *pb) tag(field, wire int) { b.buf = binary.AppendUvarint(b.buf, uint64(field)<<3|uint64(wire)) }

func (b *pb) varint(field int, v uint64) {
	if v == 0 {
		return
	}
	b.tag(field, 0)
	b.buf = binary.AppendUvarint(b.buf, v)
}

func (b *pb) fixed64(field int, v uint64) {
	if v == 0 {
		return
	}
	b.tag(field, 1)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, v)
}

func (b *pb) fixed32(field int, v uint32) {
	if v == 0 {
		return
	}
	b.tag(field, 5)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, v)
}

func (b *pb) bytes(field int, v []byte) {
	if len(v) == 0 {
		return
	}
	b.tag(field, 2)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(v)))
	b.buf = append(b.buf, v...)
}

func (b *pb) str(field int, v string) {
	if v == "" {
		return
	}
	b.tag(field, 2)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(v)))
	b.buf = append(b.buf, v...)
}

// begin starts an embedded message; end(begin(...)) closes it.
func (b *pb) begin(field int) int {
	b.tag(field, 2)
	return len(b.buf)
}

func (b *pb) end(start int) {
	n := len(b.buf) - start
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	b.buf = append(b.buf, l[:k]...)
	copy(b.buf[start+k:], b.buf[start:start+n])
	copy(b.buf[start:], l[:k])
}

func (b *pb) span(field int, s sdktrace.ReadOnlySpan) {
	m := b.begin(field)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b.bytes(1, tid[:])
	b.bytes(2, sid[:])
	b.str(3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b.bytes(4, psid[:])
	}
	b.str(5, s.Name())
	b.varint(6, uint64(s.SpanKind()))
	b.fixed64(7, uint64(s.StartTime().UnixNano()))
	b.fixed64(8, uint64(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b.keyValue(9, kv)
	}
	b.varint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		e := b.begin(11)
		b.fixed64(1, uint64(ev.Time.UnixNano()))
		b.str(2, ev.Name)
		for _, kv := range ev.Attributes {
			b.keyValue(3, kv)
		}
		b.varint(4, uint64(ev.DroppedAttributeCount))
		b.end(e)
	}
	b.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		e := b.begin(13)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b.bytes(1, ltid[:])
		b.bytes(2, lsid[:])
		b.str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			b.keyValue(4, kv)
		}
		b.varint(5, uint64(l.DroppedAttributeCount))
		b.fixed32(6, uint32(l.SpanContext.TraceFlags()))
		b.end(e)
	}
	b.varint(14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset {
		e := b.begin(15)
		b.str(2, st.Description)
		code := uint64(1) // STATUS_CODE_OK
		if st.Code == codes.Error {
			code = 2 // STATUS_CODE_ERROR
		}
		b.varint(3, code)
		b.end(e)
	}
	b.fixed32(16, uint32(sc.TraceFlags()))
	b.end(m)
}

// keyValue encodes an attribute as a KeyValue (opentelemetry/proto/common/v1).
func (b *pb) keyValue(field int, kv attribute.KeyValue) {
	m := b.begin(field)
	b.str(1, string(kv.Key))
	v := b.begin(2)
	switch kv.Value.Type() {
	case attribute.BOOL:
		b.tag(2, 0)
		if kv.Value.AsBool() {
			b.buf = append(b.buf, 1)
		} else {
			b.buf = append(b.buf, 0)
		}
	case attribute.INT64:
		b.tag(3, 0)
		b.buf = binary.AppendUvarint(b.buf, uint64(kv.Value.AsInt64()))
	case attribute.FLOAT64:
		b.tag(4, 1)
		b.buf = binary.LittleEndian.AppendUint64(b.buf, math.Float64bits(kv.Value.AsFloat64()))
	case attribute.STRING:
		b.tag(1, 2)
		s := kv.Value.AsString()
		b.buf = binary.AppendUvarint(b.buf, uint64(len(s)))
		b.buf = append(b.buf, s...)
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		a := b.begin(5) // array_value
		switch kv.Value.Type() {
		case attribute.BOOLSLICE:
			for _, x := range kv.Value.AsBoolSlice() {
				e := b.begin(1)
				b.tag(2, 0)
				if x {
					b.buf = append(b.buf, 1)
				} else {
					b.buf = append(b.buf, 0)
				}
				b.end(e)
			}
		case attribute.INT64SLICE:
			for _, x := range kv.Value.AsInt64Slice() {
				e := b.begin(1)
				b.tag(3, 0)
				b.buf = binary.AppendUvarint(b.buf, uint64(x))
				b.end(e)
			}
		case attribute.FLOAT64SLICE:
			for _, x := range kv.Value.AsFloat64Slice() {
				e := b.begin(1)
				b.tag(4, 1)
				b.buf = binary.LittleEndian.AppendUint64(b.buf, math.Float64bits(x))
				b.end(e)
			}
		case attribute.STRINGSLICE:
			for _, x := range kv.Value.AsStringSlice() {
				e := b.begin(1)
				b.tag(1, 2)
				b.buf = binary.AppendUvarint(b.buf, uint64(len(x)))
				b.buf = append(b.buf, x...)
				b.end(e)
			}
		}
		b.end(a)
	default:
		b.tag(1, 2)
		s := kv.Value.Emit()
		b.buf = binary.AppendUvarint(b.buf, uint64(len(s)))
		b.buf = append(b.buf, s...)
	}
	b.end(v)
	b.end(m)
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: comma-separated
// key=value pairs, values percent-encoded (W3C Baggage's format).
func parseHeaders(name, v string) (http.Header, error) {
	h := http.Header{}
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value; give comma-separated key=value pairs, such as Authorization=Bearer%%20TOKEN", name, strings.TrimSpace(pair))
		}
		dec, err := unescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %q: %w", name, k, err)
		}
		h.Add(k, dec)
	}
	return h, nil
}

// unescape undoes percent-encoding (not '+' for space: Baggage keeps it).
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%q ends inside a %%-escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%q holds %q, not a %%-escape of two hex digits", s, s[i:i+3])
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}
