// Package hookspan reads the spans a hook recorded in its TRACE_SPANS_PATH
// file (docs/running.md, "Traces"): one OpenTelemetry span per line, in
// OTLP/JSON encoding, each a child of the run's span (TRACEPARENT) or of
// another span of the file.
//
// Parse checks every rule of that contract and returns the spans parents
// first, or one error naming the line, the field and what to change: the
// operator drops all of a run's spans when one line is wrong, so a hook's
// author sees one warning instead of a trace with holes. The package uses
// the standard library only, so that the tests of the hook-side helpers
// (the Go SDK, the bash and Python helpers) check what they write with the
// parser the operator uses.
package hookspan

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The contract's limits.
const (
	// MaxSpans is the most spans one run may record.
	MaxSpans = 1000
	// MaxBytes is the largest spans file, in bytes.
	MaxBytes = 1 << 20
	// MaxAttributes is the most attributes one span may have.
	MaxAttributes = 64
	// MaxNameBytes is the longest span name, in bytes of UTF-8.
	MaxNameBytes = 256
	// MaxKeyBytes is the longest attribute key, in bytes.
	MaxKeyBytes = 128
	// MaxStringValueBytes is where Parse cuts an attribute's string value
	// (at a character boundary); longer values are not an error.
	MaxStringValueBytes = 1024
)

// Span kinds, as OTLP (and OpenTelemetry's trace.SpanKind) number them.
const (
	KindUnspecified = 0
	KindInternal    = 1
	KindServer      = 2
	KindClient      = 3
	KindProducer    = 4
	KindConsumer    = 5
)

// Status codes, as OTLP numbers them. OpenTelemetry Go's codes.Code numbers
// them differently (Error 1, Ok 2): map them by name, not by value.
const (
	StatusUnset = 0
	StatusOK    = 1
	StatusError = 2
)

// Span is one span a hook recorded.
type Span struct {
	TraceID [16]byte
	SpanID  [8]byte
	// ParentSpanID is the run's span id (TRACEPARENT's) or the SpanID of a
	// span returned before this one.
	ParentSpanID [8]byte
	// Name is 1 to MaxNameBytes bytes of UTF-8.
	Name string
	// Kind is one of the Kind constants.
	Kind int
	// Start and End are wall-clock times, End not before Start.
	Start, End time.Time
	// Attributes are in the order of the file, at most MaxAttributes.
	Attributes []Attr
	// StatusCode is one of the Status constants; StatusMessage is as the
	// hook wrote it.
	StatusCode    int
	StatusMessage string
}

// Attr is one attribute of a span. Value is a string (at most
// MaxStringValueBytes bytes), an int64, a bool or a float64.
type Attr struct {
	Key   string
	Value any
}

// Error is a rule a spans file breaks: the first one Parse found.
type Error struct {
	// Line is the 1-based line of the file, 0 when the error is about the
	// whole file.
	Line int
	// Field is the JSON field at fault, such as "parentSpanId" or
	// "attributes[2].key"; "" when it is the line or the file.
	Field string
	// Reason says what is wrong and what to change, naming the field.
	Reason string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return "TRACE_SPANS_PATH: " + e.Reason
	}
	return "TRACE_SPANS_PATH line " + strconv.Itoa(e.Line) + ": " + e.Reason
}

// Parse reads a spans file, with traceID and runSpanID the trace id and
// span id of the run's TRACEPARENT in lower-case hex. It returns the spans
// ordered parents before children (otherwise in the order of the file),
// none for an empty file, or an *Error for the first rule broken: the
// caller drops every span of the file then. An error that is not an *Error
// means that traceID or runSpanID is malformed.
func Parse(data []byte, traceID, runSpanID string) ([]Span, error) {
	var trace [16]byte
	var run [8]byte
	if !parseHex(trace[:], traceID) {
		return nil, fmt.Errorf("hookspan: trace id %q is not 32 lower-case hex digits", traceID)
	}
	if !parseHex(run[:], runSpanID) {
		return nil, fmt.Errorf("hookspan: run span id %q is not 16 lower-case hex digits", runSpanID)
	}
	if len(data) > MaxBytes {
		return nil, &Error{Reason: fmt.Sprintf("the file holds %d bytes, more than the %d (1 MiB) a run may write; record fewer spans, or shorter attributes", len(data), MaxBytes)}
	}
	p := parser{trace: trace, run: run}
	if err := p.lines(data); err != nil {
		return nil, err
	}
	if len(p.spans) == 0 {
		return nil, nil
	}
	return p.order()
}

// parser holds what Parse learns from the lines of one file.
type parser struct {
	trace  [16]byte
	run    [8]byte
	spans  []Span
	lineOf []int           // the file's line of each span
	byID   map[[8]byte]int // span id → index in spans
	attrs  []Attr          // backing array the spans' attributes are cut from
}

// lines decodes and checks each line on its own; the references between
// spans are checked by order, once all ids are known.
func (p *parser) lines(data []byte) error {
	n := min(bytes.Count(data, []byte{'\n'})+1, MaxSpans)
	p.spans = make([]Span, 0, n)
	p.lineOf = make([]int, 0, n)
	p.byID = make(map[[8]byte]int, n)
	for line := 1; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if blank(text) {
			continue
		}
		if len(p.spans) == MaxSpans {
			return &Error{Line: line, Reason: fmt.Sprintf("span %d, more than the %d a run may record; record fewer spans (one for a batch of objects rather than one for each)", MaxSpans+1, MaxSpans)}
		}
		s, err := p.line(text)
		if err != nil {
			err.Line = line
			return err
		}
		if first, ok := p.byID[s.SpanID]; ok {
			return &Error{Line: line, Field: "spanId", Reason: fmt.Sprintf(`"spanId" %q is also the "spanId" of line %d; give each span its own random id`, hexString(s.SpanID[:]), p.lineOf[first])}
		}
		p.byID[s.SpanID] = len(p.spans)
		p.spans = append(p.spans, s)
		p.lineOf = append(p.lineOf, line)
	}
	return nil
}

// blank reports whether a line holds only JSON white space.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// order checks that every parent is the run's span or a span of the file,
// without cycles, and returns the spans parents first.
func (p *parser) order() ([]Span, error) {
	parent := make([]int32, len(p.spans)) // index of the parent, -1 for the run's span
	for i := range p.spans {
		s := &p.spans[i]
		if s.ParentSpanID == p.run {
			parent[i] = -1
			continue
		}
		j, ok := p.byID[s.ParentSpanID]
		switch {
		case !ok:
			return nil, &Error{Line: p.lineOf[i], Field: "parentSpanId", Reason: fmt.Sprintf(`"parentSpanId" is %q, neither the run's span (TRACEPARENT) nor another span's "spanId" of the file; use %q, TRACEPARENT's span id, for a child of the run, or the "spanId" of the span it is part of`,
				hexString(s.ParentSpanID[:]), hexString(p.run[:]))}
		case j == i:
			return nil, &Error{Line: p.lineOf[i], Field: "parentSpanId", Reason: fmt.Sprintf(`"parentSpanId" is the span's own "spanId" %q; use TRACEPARENT's span id %q for a child of the run, or the "spanId" of the span it is part of`,
				hexString(s.SpanID[:]), hexString(p.run[:]))}
		}
		parent[i] = int32(j)
	}
	const (
		unseen = iota
		onPath
		placed
	)
	state := make([]uint8, len(p.spans))
	out := make([]Span, 0, len(p.spans))
	var path []int32
	for i := range p.spans {
		// Walk up to a placed span or the run's, then place the path
		// from the top down.
		path = path[:0]
		j := int32(i)
		for j >= 0 && state[j] == unseen {
			state[j] = onPath
			path = append(path, j)
			j = parent[j]
		}
		if j >= 0 && state[j] == onPath {
			return nil, p.cycle(path, j)
		}
		for k := len(path) - 1; k >= 0; k-- {
			state[path[k]] = placed
			out = append(out, p.spans[path[k]])
		}
	}
	return out, nil
}

// cycle is the error for spans that are their own ancestors: path ends in
// the cycle that starts at span j.
func (p *parser) cycle(path []int32, j int32) error {
	var lines []string
	first := -1
	for k, i := range path {
		if i == j {
			first = k
		}
		if first >= 0 {
			lines = append(lines, strconv.Itoa(p.lineOf[i]))
		}
	}
	s := &p.spans[path[first]]
	return &Error{Line: p.lineOf[j], Field: "parentSpanId", Reason: fmt.Sprintf(`"parentSpanId" is %q, and the spans of lines %s are each other's parents (a cycle); the chain of parents of every span must end at the run's span %q (TRACEPARENT)`,
		hexString(s.ParentSpanID[:]), strings.Join(lines, ", "), hexString(p.run[:]))}
}

// parseHex decodes s, exactly 2*len(dst) lower-case hex digits, into dst.
func parseHex[T string | []byte](dst []byte, s T) bool {
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

const hexDigits = "0123456789abcdef"

func hexString(b []byte) string {
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	return string(out)
}

// quote quotes a value the hook wrote for an error message, cut so that a
// long one does not flood the warning.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(cut(s, max)) + "…"
	}
	return strconv.Quote(s)
}

// cut returns at most n bytes of s, not splitting a UTF-8 character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
