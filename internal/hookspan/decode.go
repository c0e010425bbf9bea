package hookspan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// rawSpan holds the raw JSON values of a line's fields; nil is a field left
// out or null. Other fields are ignored, as the contract says.
type rawSpan struct {
	traceID, spanID, parentSpanID, name, kind, start, end, attributes, status []byte
}

func (r *rawSpan) set(key, value []byte) *Error {
	if value[0] == 'n' { // null
		value = nil
	}
	switch string(key) {
	case "traceId":
		r.traceID = value
	case "spanId":
		r.spanID = value
	case "parentSpanId":
		r.parentSpanID = value
	case "name":
		r.name = value
	case "kind":
		r.kind = value
	case "startTimeUnixNano":
		r.start = value
	case "endTimeUnixNano":
		r.end = value
	case "attributes":
		r.attributes = value
	case "status":
		r.status = value
	}
	return nil
}

// line decodes and checks one non-blank line; the caller sets Line.
func (p *parser) line(text []byte) (Span, *Error) {
	var s Span
	if !utf8.Valid(text) {
		return s, &Error{Reason: "the line is not valid UTF-8; write the spans file in UTF-8"}
	}
	start := skipSpace(text, 0)
	if text[start] != '{' {
		return s, &Error{Reason: fmt.Sprintf("the line is not a JSON object (it starts with %q); write one span per line, each one JSON object", text[start])}
	}
	if !json.Valid(text) {
		var v struct{}
		err := json.Unmarshal(text, &v).(*json.SyntaxError)
		return s, &Error{Reason: fmt.Sprintf("the line is not valid JSON: %v (at byte %d); write one span per line, each one JSON object", err, err.Offset)}
	}
	var r rawSpan
	members(text[start:], r.set)
	if err := p.ids(&r, &s); err != nil {
		return s, err
	}
	if err := name(&r, &s); err != nil {
		return s, err
	}
	if err := times(&r, &s); err != nil {
		return s, err
	}
	var err *Error
	if s.Kind, err = enum(r.kind, "kind", kindNames); err != nil {
		return s, err
	}
	if err := status(r.status, &s); err != nil {
		return s, err
	}
	return s, p.attributes(r.attributes, &s)
}

// typeError is the error for a field whose JSON type is not the one the
// contract wants.
func typeError(field string, value []byte, want string) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf("%q is a JSON %s; it must be %s", field, jsonType(value), want)}
}

// ids checks traceId, spanId and parentSpanId; whether the parent exists
// is checked once every line is read.
func (p *parser) ids(r *rawSpan, s *Span) *Error {
	for _, f := range [...]struct {
		name string
		raw  []byte
		want string
	}{{"traceId", r.traceID, "a string of 32 lower-case hex digits"}, {"spanId", r.spanID, "a string of 16 lower-case hex digits"}, {"parentSpanId", r.parentSpanID, "a string of 16 lower-case hex digits"}} {
		if f.raw != nil && f.raw[0] != '"' {
			return typeError(f.name, f.raw, f.want)
		}
	}
	traceID, spanID, parentID := text(r.traceID), text(r.spanID), text(r.parentSpanID)
	switch {
	case len(traceID) == 0:
		return &Error{Field: "traceId", Reason: fmt.Sprintf(`"traceId" is missing or empty; use %q, TRACEPARENT's trace id`, hexString(p.trace[:]))}
	case !parseHex(s.TraceID[:], traceID):
		return &Error{Field: "traceId", Reason: fmt.Sprintf(`"traceId" is %s, not 32 lower-case hex digits; use %q, TRACEPARENT's trace id`, quote(string(traceID)), hexString(p.trace[:]))}
	case s.TraceID != p.trace:
		return &Error{Field: "traceId", Reason: fmt.Sprintf(`"traceId" is %q, another trace than the run's; use %q, TRACEPARENT's trace id`, traceID, hexString(p.trace[:]))}
	case len(spanID) == 0:
		return &Error{Field: "spanId", Reason: `"spanId" is missing or empty; use 8 random bytes as 16 lower-case hex digits`}
	case !parseHex(s.SpanID[:], spanID):
		return &Error{Field: "spanId", Reason: fmt.Sprintf(`"spanId" is %s, not 16 lower-case hex digits; use 8 random bytes in hex`, quote(string(spanID)))}
	case s.SpanID == [8]byte{}:
		return &Error{Field: "spanId", Reason: `"spanId" is all zeros, which OpenTelemetry reads as no span; use 8 random bytes in hex`}
	case s.SpanID == p.run:
		return &Error{Field: "spanId", Reason: fmt.Sprintf(`"spanId" %q is the run's span id (TRACEPARENT); a span of the hook needs an id of its own: use 8 random bytes in hex`, spanID)}
	case len(parentID) == 0:
		return &Error{Field: "parentSpanId", Reason: fmt.Sprintf(`"parentSpanId" is missing or empty; use %q, TRACEPARENT's span id, for a child of the run, or the "spanId" of the span it is part of`, hexString(p.run[:]))}
	case !parseHex(s.ParentSpanID[:], parentID):
		return &Error{Field: "parentSpanId", Reason: fmt.Sprintf(`"parentSpanId" is %s, not 16 lower-case hex digits; use %q, TRACEPARENT's span id, for a child of the run, or the "spanId" of the span it is part of`, quote(string(parentID)), hexString(p.run[:]))}
	}
	return nil
}

// text is the text of a raw JSON string, nil for nil.
func text(raw []byte) []byte {
	if raw == nil {
		return nil
	}
	return unquote(raw)
}

func name(r *rawSpan, s *Span) *Error {
	if r.name != nil && r.name[0] != '"' {
		return typeError("name", r.name, "a string")
	}
	n := text(r.name)
	if len(n) == 0 {
		return &Error{Field: "name", Reason: `"name" is missing or empty; name the span (1 to 256 bytes)`}
	}
	if len(n) > MaxNameBytes {
		return &Error{Field: "name", Reason: fmt.Sprintf(`"name" %s is %d bytes long, more than %d; shorten it, and put the details in attributes`, quote(string(n)), len(n), MaxNameBytes)}
	}
	s.Name = string(n)
	return nil
}

// times reads startTimeUnixNano and endTimeUnixNano.
func times(r *rawSpan, s *Span) *Error {
	start, err := unixNano(r.start, "startTimeUnixNano")
	if err != nil {
		return err
	}
	end, err := unixNano(r.end, "endTimeUnixNano")
	if err != nil {
		return err
	}
	if end < start {
		return &Error{Field: "endTimeUnixNano", Reason: fmt.Sprintf(`"endTimeUnixNano" %d is before "startTimeUnixNano" %d; a span must end after it starts`, end, start)}
	}
	s.Start, s.End = time.Unix(0, start), time.Unix(0, end)
	return nil
}

// unixNano reads a time in nanoseconds since 1970, a JSON string or number
// of digits.
func unixNano(raw []byte, field string) (int64, *Error) {
	if raw == nil {
		return 0, &Error{Field: field, Reason: fmt.Sprintf("%q is missing; write the time in nanoseconds since 1970, as a JSON string of digits", field)}
	}
	if digits := numberText(raw); allDigits(digits) {
		if n, err := strconv.ParseInt(string(digits), 10, 64); err == nil {
			return n, nil
		}
		return 0, &Error{Field: field, Reason: fmt.Sprintf("%q is %s, past the year 2262; write the time in nanoseconds since 1970", field, showRaw(raw))}
	}
	return 0, &Error{Field: field, Reason: fmt.Sprintf("%q is %s, not an unsigned integer; write the time in nanoseconds since 1970, as a JSON string of digits", field, showRaw(raw))}
}

// numberText is the text of a number written as a JSON string or number;
// for other values it returns something that is not a number.
func numberText(raw []byte) []byte {
	if raw[0] == '"' {
		return unquote(raw)
	}
	return raw
}

// showRaw is a raw JSON value as the file has it, for an error message.
func showRaw(raw []byte) string {
	const max = 64
	if len(raw) > max {
		return cut(string(raw), max) + "…"
	}
	return string(raw)
}

func allDigits(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var (
	kindNames = []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
		"SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
	statusNames = []string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}
)

// enum reads an OTLP enum: a JSON number below len(names), or one of names
// as a JSON string; absent is 0.
func enum(raw []byte, field string, names []string) (int, *Error) {
	switch {
	case raw == nil:
		return 0, nil
	case raw[0] == '"':
		name := unquote(raw)
		for i, n := range names {
			if string(name) == n {
				return i, nil
			}
		}
	case len(raw) == 1 && '0' <= raw[0] && int(raw[0]-'0') < len(names):
		return int(raw[0] - '0'), nil
	}
	return 0, &Error{Field: field, Reason: fmt.Sprintf("%q is %s; it must be a number from 0 to %d or one of the names %s", field, showRaw(raw), len(names)-1, strings.Join(names, ", "))}
}

// status reads {"code": C, "message": M}.
func status(raw []byte, s *Span) *Error {
	if raw == nil {
		return nil
	}
	if raw[0] != '{' {
		return typeError("status", raw, `an object such as {"code": 2, "message": "..."}`)
	}
	var code, message []byte
	members(raw, func(key, value []byte) *Error {
		if value[0] == 'n' {
			value = nil
		}
		switch string(key) {
		case "code":
			code = value
		case "message":
			message = value
		}
		return nil
	})
	var err *Error
	if s.StatusCode, err = enum(code, "status.code", statusNames); err != nil {
		return err
	}
	if message != nil && message[0] != '"' {
		return typeError("status.message", message, "a string")
	}
	if m := text(message); len(m) > 0 {
		s.StatusMessage = string(m)
	}
	return nil
}

// attributes reads the attributes into a slice cut from p.attrs, so that
// the spans of a file share a few arrays.
func (p *parser) attributes(raw []byte, s *Span) *Error {
	if raw == nil {
		return nil
	}
	if raw[0] != '[' {
		return typeError("attributes", raw, `an array of {"key": K, "value": {"stringValue": V}} objects`)
	}
	n := 0
	elements(raw, func(int, []byte) *Error { n++; return nil })
	if n > MaxAttributes {
		return &Error{Field: "attributes", Reason: fmt.Sprintf(`"attributes" has %d entries, more than %d; record fewer`, n, MaxAttributes)}
	}
	first := len(p.attrs)
	err := elements(raw, func(i int, value []byte) *Error {
		a, err := attribute(value, i)
		if err == nil {
			p.attrs = append(p.attrs, a)
		}
		return err
	})
	if err != nil {
		p.attrs = p.attrs[:first]
		return err
	}
	if len(p.attrs) > first {
		s.Attributes = p.attrs[first:len(p.attrs):len(p.attrs)]
	}
	return nil
}

// attrField names an attribute's field in messages: attributes[2].key.
func attrField(i int, field string) string {
	return "attributes[" + strconv.Itoa(i) + "]" + field
}

func attribute(raw []byte, i int) (Attr, *Error) {
	if raw[0] != '{' {
		return Attr{}, typeError(attrField(i, ""), raw, `an object {"key": K, "value": {"stringValue": V}}`)
	}
	var key, value []byte
	members(raw, func(k, v []byte) *Error {
		if v[0] == 'n' {
			v = nil
		}
		switch string(k) {
		case "key":
			key = v
		case "value":
			value = v
		}
		return nil
	})
	if key != nil && key[0] != '"' {
		return Attr{}, typeError(attrField(i, ".key"), key, "a string")
	}
	k := text(key)
	switch {
	case len(k) == 0:
		return Attr{}, &Error{Field: attrField(i, ".key"), Reason: fmt.Sprintf(`%q is missing or empty; name the attribute (1 to %d bytes)`, attrField(i, ".key"), MaxKeyBytes)}
	case len(k) > MaxKeyBytes:
		return Attr{}, &Error{Field: attrField(i, ".key"), Reason: fmt.Sprintf(`%q %s is %d bytes long, more than %d; shorten it`, attrField(i, ".key"), quote(string(k)), len(k), MaxKeyBytes)}
	}
	if value != nil && value[0] != '{' {
		return Attr{}, typeError(attrField(i, ".value"), value, `an object such as {"stringValue": V}`)
	}
	v, err := attrValue(value, i)
	return Attr{Key: string(k), Value: v}, err
}

// attrValue reads an attribute's {"stringValue"|"intValue"|"boolValue"|
// "doubleValue": V}, exactly one of them.
func attrValue(obj []byte, i int) (any, *Error) {
	var kind string
	var raw []byte
	if obj != nil {
		err := members(obj, func(k, v []byte) *Error {
			if v[0] == 'n' {
				return nil
			}
			var name string
			switch string(k) {
			case "stringValue":
				name = "stringValue"
			case "intValue":
				name = "intValue"
			case "boolValue":
				name = "boolValue"
			case "doubleValue":
				name = "doubleValue"
			default:
				return nil
			}
			if kind != "" && kind != name {
				return &Error{Field: attrField(i, ".value"), Reason: fmt.Sprintf(`%q holds both %q and %q; give one`, attrField(i, ".value"), kind, name)}
			}
			kind, raw = name, v
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var value any
	ok := false
	switch kind {
	case "":
		return nil, &Error{Field: attrField(i, ".value"), Reason: fmt.Sprintf(`%q holds none of "stringValue", "intValue", "boolValue", "doubleValue"; give one (arrays, maps and bytes are not supported: write them as a string)`, attrField(i, ".value"))}
	case "stringValue":
		if ok = raw[0] == '"'; ok {
			value = cut(string(unquote(raw)), MaxStringValueBytes)
		}
	case "intValue":
		var n int64
		if n, ok = intValue(raw); ok {
			value = n
		}
	case "boolValue":
		ok = raw[0] == 't' || raw[0] == 'f'
		value = raw[0] == 't'
	case "doubleValue":
		var f float64
		if f, ok = doubleValue(raw); ok {
			value = f
		}
	}
	if !ok {
		field := attrField(i, ".value."+kind)
		return nil, &Error{Field: field, Reason: fmt.Sprintf(`%q is %s; it must be %s`, field, showRaw(raw), wantValue[kind])}
	}
	return value, nil
}

var wantValue = map[string]string{
	"stringValue": "a JSON string",
	"intValue":    "an integer from -2^63 to 2^63-1, as a JSON string or number",
	"boolValue":   "true or false",
	"doubleValue": "a finite JSON number",
}

func intValue(raw []byte) (int64, bool) {
	s := numberText(raw)
	if !allDigits(bytes.TrimPrefix(s, []byte("-"))) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	return n, err == nil
}

func doubleValue(raw []byte) (float64, bool) {
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil && !math.IsInf(f, 0)
}
