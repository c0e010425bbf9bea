package sdk

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The environment variables of a traced run (extension; docs/running.md,
// "Traces"). The runtime sets them only when tracing is on; shell-operator
// never does, and then the functions below do nothing.
const (
	// EnvTraceParent is the W3C traceparent of the run's span:
	// 00-<trace id>-<span id>-<flags>.
	EnvTraceParent = "TRACEPARENT"
	// EnvTraceState is the W3C tracestate of the run, when it has one.
	EnvTraceState = "TRACESTATE"
	// EnvTraceSpansPath names the file a hook appends its own spans to.
	EnvTraceSpansPath = "TRACE_SPANS_PATH"
)

// The contract's limits on the spans file (internal/hookspan holds them
// for the runtime; a test keeps the two equal). A file beyond them loses
// every span of the run, so the SDK keeps within them instead.
const (
	maxSpans       = 1000
	maxSpansBytes  = 1 << 20
	maxAttributes  = 64
	maxNameBytes   = 256
	maxKeyBytes    = 128
	maxValueBytes  = 1024
	maxStatusBytes = 1024
)

// Attr is an attribute of a span: Key and a Value that is a string, an
// integer, a bool or a float. Other values are recorded as their fmt.Sprint
// text. Make one with String, Int, Bool or Float.
type Attr struct {
	Key   string
	Value any
}

// String is a string attribute; a value longer than 1 KiB is cut.
func String(key, value string) Attr { return Attr{Key: key, Value: value} }

// Int is an integer attribute.
func Int(key string, value int) Attr { return Attr{Key: key, Value: int64(value)} }

// Bool is a boolean attribute.
func Bool(key string, value bool) Attr { return Attr{Key: key, Value: value} }

// Float is a floating-point attribute; NaN and infinities are recorded as
// strings.
func Float(key string, value float64) Attr { return Attr{Key: key, Value: value} }

// Span is a span of the hook's own, started by StartSpan and recorded in
// the run's trace by End, as a child of the run's span or of the span it
// was started in. A nil *Span, which StartSpan returns when tracing is off,
// is valid: its methods do nothing.
//
// A Go hook records spans with StartSpan and passes the trace on to what
// it calls with TraceParent, without OpenTelemetry:
//
//	ctx, span := sdk.StartSpan(context.Background(), "charge", sdk.String("ticket", name))
//	req, _ := http.NewRequestWithContext(ctx, "POST", billingURL, body)
//	req.Header.Set("traceparent", sdk.TraceParent(ctx))
//	resp, err := http.DefaultClient.Do(req)
//	span.End(err)
//
// A hook that sets up OpenTelemetry itself (with its own exporter,
// endpoint and credentials) joins the run's trace instead by reading its
// parent from the environment:
//
//	carrier := propagation.MapCarrier{
//		"traceparent": os.Getenv(sdk.EnvTraceParent),
//		"tracestate":  os.Getenv(sdk.EnvTraceState),
//	}
//	ctx := propagation.TraceContext{}.Extract(context.Background(), carrier)
//	ctx, span := tracer.Start(ctx, "charge") // a child of the run's span
//	defer span.End()
//
// Its spans then go to its own collector; TRACE_SPANS_PATH is the way
// that needs none.
type Span struct {
	trace  [16]byte
	id     [8]byte
	parent [8]byte
	flags  byte
	path   string
	name   string
	start  time.Time

	mu    sync.Mutex
	attrs []Attr
	ended bool
}

// spanKey is the context key of the current *Span.
type spanKey struct{}

// StartSpan starts a span named name, a child of ctx's span (one StartSpan
// returned) or, when ctx has none, of the run's span ($TRACEPARENT). It
// returns a context carrying the new span, for the spans and requests made
// inside it, and the span, which End records.
//
// When tracing is off ($TRACEPARENT or $TRACE_SPANS_PATH unset, as under
// shell-operator) it returns ctx and a nil *Span, which does nothing: a
// hook may call it unconditionally.
func StartSpan(ctx context.Context, name string, attrs ...Attr) (context.Context, *Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	var s *Span
	if p, ok := ctx.Value(spanKey{}).(*Span); ok {
		s = &Span{trace: p.trace, parent: p.id, flags: p.flags, path: p.path}
	} else {
		tp, ok := parseTraceParent(os.Getenv(EnvTraceParent))
		path := os.Getenv(EnvTraceSpansPath)
		if !ok || path == "" {
			return ctx, nil
		}
		s = &Span{trace: tp.trace, parent: tp.id, flags: tp.flags, path: path}
	}
	s.id = newSpanID()
	s.name = name
	s.start = time.Now()
	s.SetAttributes(attrs...)
	return context.WithValue(ctx, spanKey{}, s), s
}

// TraceParent is the W3C traceparent to send on with a request made in
// ctx, as the "traceparent" HTTP header: that of ctx's span (StartSpan),
// else the run's ($TRACEPARENT), and "" when tracing is off. With
// $TRACESTATE set, send it as the "tracestate" header too.
func TraceParent(ctx context.Context) string {
	if ctx != nil {
		if s, ok := ctx.Value(spanKey{}).(*Span); ok {
			return s.TraceParent()
		}
	}
	env := os.Getenv(EnvTraceParent)
	if _, ok := parseTraceParent(env); !ok {
		return ""
	}
	return env
}

// TraceParent is the span's W3C traceparent, "" for a nil span.
func (s *Span) TraceParent() string {
	if s == nil {
		return ""
	}
	return formatTraceParent(traceParent{trace: s.trace, id: s.id, flags: s.flags})
}

// SetAttributes adds attributes to the span, replacing those of the same
// key. Beyond 64 attributes the others are dropped; empty keys are
// ignored. Attributes set after End are not recorded.
func (s *Span) SetAttributes(attrs ...Attr) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
outer:
	for _, a := range attrs {
		if a.Key == "" {
			continue
		}
		a.Key = validText(a.Key, maxKeyBytes)
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i].Value = a.Value
				continue outer
			}
		}
		if len(s.attrs) < maxAttributes {
			s.attrs = append(s.attrs, a)
		}
	}
}

// End ends the span and appends it to $TRACE_SPANS_PATH; err, when not
// nil, marks it failed with err's message (its first KiB). Only the first
// End of a span records it. Recording never fails the hook: a span that
// cannot be written, or that would take the run past the contract's
// limits (1,000 spans, 1 MiB), is left out.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	end := s.start.Add(time.Since(s.start)) // by the monotonic clock: never before start
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	line := s.appendJSON(make([]byte, 0, 256), end, err)
	s.mu.Unlock()
	appendSpanLine(s.path, line)
}

// spansFile counts what this process wrote to the current run's spans
// file, so that it stays within the contract's limits, and serialises the
// writes, so that spans ended at once by several goroutines stay whole
// lines.
var spansFile struct {
	sync.Mutex
	path  string
	spans int
}

// appendSpanLine appends one line to the spans file at path in one write.
func appendSpanLine(path string, line []byte) {
	spansFile.Lock()
	defer spansFile.Unlock()
	if spansFile.path != path { // a resident hook's next run
		spansFile.path, spansFile.spans = path, 0
	}
	if spansFile.spans >= maxSpans {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Size()+int64(len(line)) > maxSpansBytes {
		return
	}
	if _, err := f.Write(line); err == nil {
		spansFile.spans++
	}
}

// appendJSON appends the span's line of the spans file (docs/running.md,
// "Traces": OTLP/JSON, ids in hex, times as strings).
func (s *Span) appendJSON(b []byte, end time.Time, err error) []byte {
	b = append(b, `{"traceId":"`...)
	b = appendHex(b, s.trace[:])
	b = append(b, `","spanId":"`...)
	b = appendHex(b, s.id[:])
	b = append(b, `","parentSpanId":"`...)
	b = appendHex(b, s.parent[:])
	b = append(b, `","name":`...)
	name := s.name
	if name == "" {
		name = "unnamed"
	}
	b = appendString(b, validText(name, maxNameBytes))
	b = append(b, `,"kind":1,"startTimeUnixNano":"`...) // SPAN_KIND_INTERNAL
	b = strconv.AppendInt(b, s.start.UnixNano(), 10)
	b = append(b, `","endTimeUnixNano":"`...)
	b = strconv.AppendInt(b, end.UnixNano(), 10)
	b = append(b, '"')
	if len(s.attrs) > 0 {
		b = append(b, `,"attributes":[`...)
		for i, a := range s.attrs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = appendString(b, a.Key)
			b = append(b, `,"value":`...)
			b = appendValue(b, a.Value)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if err != nil {
		b = append(b, `,"status":{"code":2,"message":`...)
		b = appendString(b, validText(err.Error(), maxStatusBytes))
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendValue appends an OTLP AnyValue of the four kinds the contract
// allows.
func appendValue(b []byte, v any) []byte {
	var n int64
	switch v := v.(type) {
	case string:
		return appendStringValue(b, v)
	case bool:
		b = strconv.AppendBool(append(b, `{"boolValue":`...), v)
		return append(b, '}')
	case int:
		n = int64(v)
	case int8:
		n = int64(v)
	case int16:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case uint8:
		n = int64(v)
	case uint16:
		n = int64(v)
	case uint32:
		n = int64(v)
	case uint:
		return appendUint(b, uint64(v))
	case uint64:
		return appendUint(b, v)
	case float32:
		return appendFloat(b, float64(v))
	case float64:
		return appendFloat(b, v)
	case error:
		return appendStringValue(b, v.Error())
	case fmt.Stringer:
		return appendStringValue(b, v.String())
	default:
		return appendStringValue(b, fmt.Sprint(v))
	}
	b = append(b, `{"intValue":"`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, `"}`...)
}

func appendUint(b []byte, u uint64) []byte {
	if u > math.MaxInt64 {
		return appendStringValue(b, strconv.FormatUint(u, 10))
	}
	b = append(b, `{"intValue":"`...)
	b = strconv.AppendUint(b, u, 10)
	return append(b, `"}`...)
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendStringValue(b, strconv.FormatFloat(f, 'g', -1, 64))
	}
	b = append(b, `{"doubleValue":`...)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	return append(b, '}')
}

func appendStringValue(b []byte, s string) []byte {
	b = append(b, `{"stringValue":`...)
	b = appendString(b, validText(s, maxValueBytes))
	return append(b, '}')
}

// validText is s as valid UTF-8, cut to at most n bytes between
// characters.
func validText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// appendString appends s, valid UTF-8, as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendHex(b, id []byte) []byte {
	const hex = "0123456789abcdef"
	for _, c := range id {
		b = append(b, hex[c>>4], hex[c&15])
	}
	return b
}

// traceParent is a parsed W3C traceparent of version 00.
type traceParent struct {
	trace [16]byte
	id    [8]byte
	flags byte
}

// parseTraceParent reads 00-<32 hex>-<16 hex>-<2 hex>, lower-case, with
// ids not all zero.
func parseTraceParent(s string) (traceParent, bool) {
	var tp traceParent
	var flags [1]byte
	ok := len(s) == 55 && s[:3] == "00-" && s[35] == '-' && s[52] == '-' &&
		decodeHex(tp.trace[:], s[3:35]) && decodeHex(tp.id[:], s[36:52]) && decodeHex(flags[:], s[53:]) &&
		tp.trace != [16]byte{} && tp.id != [8]byte{}
	tp.flags = flags[0]
	return tp, ok
}

func formatTraceParent(tp traceParent) string {
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = appendHex(b, tp.trace[:])
	b = append(b, '-')
	b = appendHex(b, tp.id[:])
	b = append(b, '-')
	b = appendHex(b, []byte{tp.flags})
	return string(b)
}

// decodeHex decodes s, exactly 2*len(dst) lower-case hex digits.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// newSpanID is 8 random bytes, not all zero.
func newSpanID() [8]byte {
	var id [8]byte
	for id == [8]byte{} {
		rand.Read(id[:]) // never fails (crypto/rand since Go 1.24)
	}
	return id
}
