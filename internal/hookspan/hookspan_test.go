package hookspan

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The run's TRACEPARENT in these tests: 00-<trace>-<run>-01.
const (
	trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	run   = "00f067aa0ba902b7"
)

// drop, as a field's value in spanLine, leaves the field out.
var drop = new(int)

// spanLine is a valid span line, a child of the run, with fields changed
// by kv (name, value, name, value, ...); a value that is a
// json.RawMessage is written as is.
func spanLine(kv ...any) string {
	m := map[string]any{
		"traceId": trace, "spanId": "1111111111111111", "parentSpanId": run, "name": "work",
		"startTimeUnixNano": "1733550000000000000", "endTimeUnixNano": "1733550000120000000",
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == drop {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1]
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func id8(s string) (b [8]byte) {
	hex.Decode(b[:], []byte(s))
	return b
}

// TestParseSpecExample: the contract's example line, in full.
func TestParseSpecExample(t *testing.T) {
	line := `{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","parentSpanId":"a3ce929d0e0e4736","name":"call billing","startTimeUnixNano":"1733550000000000000","endTimeUnixNano":"1733550000120000000","attributes":[{"key":"http.status_code","value":{"intValue":"200"}}],"status":{"code":2,"message":"timeout"}}`
	spans, err := Parse([]byte(line+"\n"), trace, "a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	var tr [16]byte
	hex.Decode(tr[:], []byte(trace))
	want := []Span{{
		TraceID: tr, SpanID: id8("00f067aa0ba902b7"), ParentSpanID: id8("a3ce929d0e0e4736"),
		Name: "call billing", Start: time.Unix(0, 1733550000000000000), End: time.Unix(0, 1733550000120000000),
		Attributes: []Attr{{"http.status_code", int64(200)}}, StatusCode: StatusError, StatusMessage: "timeout",
	}}
	if !reflect.DeepEqual(spans, want) {
		t.Errorf("got  %+v\nwant %+v", spans, want)
	}
}

// TestParseAccepts: every form the rules allow, and what each reads as.
func TestParseAccepts(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	for _, tc := range []struct {
		name  string
		line  string
		check func(Span) bool
	}{
		{"keys with escapes", strings.Replace(spanLine("name", "a\u00e9"), `"name"`, `"n\u0061me"`, 1),
			func(s Span) bool { return s.Name == "aé" }},
		{"duplicate keys: the last counts", strings.Replace(spanLine(), `{`, `{"name":"first",`, 1),
			func(s Span) bool { return s.Name == "work" }},
		{"white space", strings.NewReplacer(",", " ,\t", ":", "\r: ", "{", " { ", "[", "[ ", "}", " } ").Replace(spanLine("attributes", []any{map[string]any{"key": "k", "value": map[string]any{"intValue": 1}}})),
			func(s Span) bool { return len(s.Attributes) == 1 && s.Attributes[0].Value == int64(1) }},
		{"times as numbers", spanLine("startTimeUnixNano", 5, "endTimeUnixNano", 5),
			func(s Span) bool { return s.Start.UnixNano() == 5 && s.End.Equal(s.Start) }},
		{"time with escapes", spanLine("endTimeUnixNano", json.RawMessage(`"\u0031733550000120000000"`)),
			func(s Span) bool { return s.End.UnixNano() == 1733550000120000000 }},
		{"kind as number", spanLine("kind", 3), func(s Span) bool { return s.Kind == KindClient }},
		{"kind as name", spanLine("kind", "SPAN_KIND_CONSUMER"), func(s Span) bool { return s.Kind == KindConsumer }},
		{"kind null", spanLine("kind", nil), func(s Span) bool { return s.Kind == KindUnspecified }},
		{"status names", spanLine("status", map[string]any{"code": "STATUS_CODE_OK"}),
			func(s Span) bool { return s.StatusCode == StatusOK && s.StatusMessage == "" }},
		{"status null", spanLine("status", nil), func(s Span) bool { return s.StatusCode == StatusUnset }},
		{"every value type", spanLine("attributes", []any{
			map[string]any{"key": "s", "value": map[string]any{"stringValue": "x"}},
			map[string]any{"key": "i", "value": map[string]any{"intValue": -7}},
			map[string]any{"key": "i2", "value": map[string]any{"intValue": "-9223372036854775808"}},
			map[string]any{"key": "b", "value": map[string]any{"boolValue": true}},
			map[string]any{"key": "d", "value": map[string]any{"doubleValue": 1.5e-3}},
			map[string]any{"key": "n", "value": map[string]any{"stringValue": nil, "boolValue": false}},
		}), func(s Span) bool {
			return reflect.DeepEqual(s.Attributes, []Attr{{"s", "x"}, {"i", int64(-7)}, {"i2", int64(-9223372036854775808)},
				{"b", true}, {"d", 1.5e-3}, {"n", false}})
		}},
		{"long string value cut at a character", spanLine("attributes", []any{map[string]any{"key": "k", "value": map[string]any{"stringValue": long}}}),
			func(s Span) bool {
				v := s.Attributes[0].Value.(string)
				return len(v) == 1024 && utf8.ValidString(v)
			}},
		{"unknown fields", spanLine("events", []any{1}, "flags", 1, "traceState", "x", "droppedAttributesCount", 2,
			"attributes", []any{map[string]any{"key": "k", "value": map[string]any{"stringValue": "v", "x": 1}, "y": 2}}),
			func(s Span) bool { return len(s.Attributes) == 1 }},
		{"longest name and key", spanLine("name", strings.Repeat("n", 256), "attributes", []any{map[string]any{"key": strings.Repeat("k", 128), "value": map[string]any{"boolValue": true}}}),
			func(s Span) bool { return len(s.Name) == 256 }},
		{"attributes null", spanLine("attributes", nil), func(s Span) bool { return s.Attributes == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, err := Parse([]byte(tc.line), trace, run)
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) != 1 || !tc.check(spans[0]) {
				t.Errorf("%s\nread as %+v", tc.line, spans)
			}
		})
	}
}

// TestParseLines: blank lines are skipped but counted, CRLF endings and a
// last line without newline are read, and an empty file has no span.
func TestParseLines(t *testing.T) {
	for _, data := range []string{"", "\n", " \t\r\n\n"} {
		if spans, err := Parse([]byte(data), trace, run); spans != nil || err != nil {
			t.Errorf("Parse(%q) = %v, %v; want none", data, spans, err)
		}
	}
	data := "\n" + spanLine() + "\r\n  \n" + spanLine("spanId", "2222222222222222")
	spans, err := Parse([]byte(data), trace, run)
	if err != nil || len(spans) != 2 {
		t.Fatalf("got %d spans, %v", len(spans), err)
	}
	_, err = Parse([]byte(data+"\n\nnot json"), trace, run)
	if e := new(Error); !errors.As(err, &e) || e.Line != 6 {
		t.Errorf("error %v, want one on line 6", err)
	}
}

// TestParseOrder: parents come before children, whatever the order of the
// file; otherwise the file's order stays.
func TestParseOrder(t *testing.T) {
	// a ← b ← c (c is b's child), and d, all written as spans end:
	// children first.
	lines := []string{
		spanLine("spanId", "cccccccccccccccc", "parentSpanId", "bbbbbbbbbbbbbbbb", "name", "c"),
		spanLine("spanId", "dddddddddddddddd", "name", "d"),
		spanLine("spanId", "bbbbbbbbbbbbbbbb", "parentSpanId", "aaaaaaaaaaaaaaaa", "name", "b"),
		spanLine("spanId", "eeeeeeeeeeeeeeee", "parentSpanId", "aaaaaaaaaaaaaaaa", "name", "e"),
		spanLine("spanId", "aaaaaaaaaaaaaaaa", "name", "a"),
	}
	spans, err := Parse([]byte(strings.Join(lines, "\n")), trace, run)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ""); got != "abcde" {
		t.Errorf("order %q, want abcde", got)
	}
}

// TestParseErrors: each rule broken, with the line, the field and the
// message that says what to change.
func TestParseErrors(t *testing.T) {
	ok := spanLine()
	attr := func(a any) string { return spanLine("attributes", []any{a}) }
	val := func(v any) string { return attr(map[string]any{"key": "k", "value": v}) }
	var many []any
	for i := range 65 {
		many = append(many, map[string]any{"key": fmt.Sprint(i), "value": map[string]any{"boolValue": true}})
	}
	for _, tc := range []struct {
		name, data string
		line       int
		field      string
		want       string // the whole message, or a part of it ending in "…"
	}{
		{"not JSON", ok + "\n{", 2, "", `TRACE_SPANS_PATH line 2: the line is not valid JSON: unexpected end of JSON input (at byte 1); write one span per line, each one JSON object`},
		{"trailing text", ok + " x", 1, "", `TRACE_SPANS_PATH line 1: the line is not valid JSON: invalid character 'x' after top-level value…`},
		{"array", "[]", 1, "", `TRACE_SPANS_PATH line 1: the line is not a JSON object (it starts with '['); write one span per line, each one JSON object`},
		{"null", "null", 1, "", `TRACE_SPANS_PATH line 1: the line is not a JSON object (it starts with 'n')…`},
		{"not UTF-8", spanLine("name", "x") + "\xff", 1, "", `TRACE_SPANS_PATH line 1: the line is not valid UTF-8; write the spans file in UTF-8`},
		{"keys match exactly", spanLine("traceId", drop, "TraceId", trace), 1, "traceId", `…"traceId" is missing or empty…`},
		{"traceId missing", spanLine("traceId", drop), 1, "traceId", `TRACE_SPANS_PATH line 1: "traceId" is missing or empty; use "4bf92f3577b34da6a3ce929d0e0e4736", TRACEPARENT's trace id`},
		{"traceId a number", spanLine("traceId", 1), 1, "traceId", `TRACE_SPANS_PATH line 1: "traceId" is a JSON number; it must be a string of 32 lower-case hex digits`},
		{"traceId upper case", spanLine("traceId", strings.ToUpper(trace)), 1, "traceId", `TRACE_SPANS_PATH line 1: "traceId" is "4BF92F3577B34DA6A3CE929D0E0E4736", not 32 lower-case hex digits; use "4bf92f3577b34da6a3ce929d0e0e4736", TRACEPARENT's trace id`},
		{"traceId short", spanLine("traceId", trace[2:]), 1, "traceId", `…not 32 lower-case hex digits…`},
		{"traceId of another trace", spanLine("traceId", "0123456789abcdef0123456789abcdef"), 1, "traceId", `TRACE_SPANS_PATH line 1: "traceId" is "0123456789abcdef0123456789abcdef", another trace than the run's; use "4bf92f3577b34da6a3ce929d0e0e4736", TRACEPARENT's trace id`},
		{"spanId missing", spanLine("spanId", ""), 1, "spanId", `TRACE_SPANS_PATH line 1: "spanId" is missing or empty; use 8 random bytes as 16 lower-case hex digits`},
		{"spanId not hex", spanLine("spanId", "ab12"), 1, "spanId", `TRACE_SPANS_PATH line 1: "spanId" is "ab12", not 16 lower-case hex digits; use 8 random bytes in hex`},
		{"spanId zero", spanLine("spanId", "0000000000000000"), 1, "spanId", `TRACE_SPANS_PATH line 1: "spanId" is all zeros, which OpenTelemetry reads as no span; use 8 random bytes in hex`},
		{"spanId the run's", spanLine("spanId", run), 1, "spanId", `TRACE_SPANS_PATH line 1: "spanId" "00f067aa0ba902b7" is the run's span id (TRACEPARENT); a span of the hook needs an id of its own: use 8 random bytes in hex`},
		{"spanId twice", "\n" + ok + "\n" + ok, 3, "spanId", `TRACE_SPANS_PATH line 3: "spanId" "1111111111111111" is also the "spanId" of line 2; give each span its own random id`},
		{"parentSpanId missing", spanLine("parentSpanId", drop), 1, "parentSpanId", `TRACE_SPANS_PATH line 1: "parentSpanId" is missing or empty; use "00f067aa0ba902b7", TRACEPARENT's span id, for a child of the run, or the "spanId" of the span it is part of`},
		{"parentSpanId not hex", spanLine("parentSpanId", "ab12"), 1, "parentSpanId", `TRACE_SPANS_PATH line 1: "parentSpanId" is "ab12", not 16 lower-case hex digits; use "00f067aa0ba902b7"…`},
		{"parentSpanId unknown", ok + "\n" + spanLine("spanId", "2222222222222222", "parentSpanId", "abababababababab"), 2, "parentSpanId",
			`TRACE_SPANS_PATH line 2: "parentSpanId" is "abababababababab", neither the run's span (TRACEPARENT) nor another span's "spanId" of the file; use "00f067aa0ba902b7", TRACEPARENT's span id, for a child of the run, or the "spanId" of the span it is part of`},
		{"parentSpanId itself", spanLine("parentSpanId", "1111111111111111"), 1, "parentSpanId", `TRACE_SPANS_PATH line 1: "parentSpanId" is the span's own "spanId" "1111111111111111"; use TRACEPARENT's span id "00f067aa0ba902b7"…`},
		{"cycle", ok + "\n" + spanLine("spanId", "2222222222222222", "parentSpanId", "3333333333333333") + "\n" +
			spanLine("spanId", "3333333333333333", "parentSpanId", "4444444444444444") + "\n" +
			spanLine("spanId", "4444444444444444", "parentSpanId", "2222222222222222"), 2, "parentSpanId",
			`TRACE_SPANS_PATH line 2: "parentSpanId" is "3333333333333333", and the spans of lines 2, 3, 4 are each other's parents (a cycle); the chain of parents of every span must end at the run's span "00f067aa0ba902b7" (TRACEPARENT)`},
		{"name missing", spanLine("name", drop), 1, "name", `TRACE_SPANS_PATH line 1: "name" is missing or empty; name the span (1 to 256 bytes)`},
		{"name empty", spanLine("name", ""), 1, "name", `…"name" is missing or empty…`},
		{"name long", spanLine("name", strings.Repeat("é", 129)), 1, "name", `TRACE_SPANS_PATH line 1: "name" "éééééééééééééééééééééééééééééééé"… is 258 bytes long, more than 256; shorten it, and put the details in attributes`},
		{"name an object", spanLine("name", map[string]any{}), 1, "name", `TRACE_SPANS_PATH line 1: "name" is a JSON object; it must be a string`},
		{"start missing", spanLine("startTimeUnixNano", drop), 1, "startTimeUnixNano", `TRACE_SPANS_PATH line 1: "startTimeUnixNano" is missing; write the time in nanoseconds since 1970, as a JSON string of digits`},
		{"end null", spanLine("endTimeUnixNano", nil), 1, "endTimeUnixNano", `…"endTimeUnixNano" is missing…`},
		{"start negative", spanLine("startTimeUnixNano", -1), 1, "startTimeUnixNano", `TRACE_SPANS_PATH line 1: "startTimeUnixNano" is -1, not an unsigned integer; write the time in nanoseconds since 1970, as a JSON string of digits`},
		{"start a float", spanLine("startTimeUnixNano", 1.5), 1, "startTimeUnixNano", `…"startTimeUnixNano" is 1.5, not an unsigned integer…`},
		{"start in seconds, text", spanLine("startTimeUnixNano", "1733550000.5"), 1, "startTimeUnixNano", `…"startTimeUnixNano" is "1733550000.5", not an unsigned integer…`},
		{"end past 2262", spanLine("endTimeUnixNano", "9223372036854775808"), 1, "endTimeUnixNano", `TRACE_SPANS_PATH line 1: "endTimeUnixNano" is "9223372036854775808", past the year 2262; write the time in nanoseconds since 1970`},
		{"end before start", spanLine("startTimeUnixNano", "20", "endTimeUnixNano", "10"), 1, "endTimeUnixNano", `TRACE_SPANS_PATH line 1: "endTimeUnixNano" 10 is before "startTimeUnixNano" 20; a span must end after it starts`},
		{"kind 6", spanLine("kind", 6), 1, "kind", `TRACE_SPANS_PATH line 1: "kind" is 6; it must be a number from 0 to 5 or one of the names SPAN_KIND_UNSPECIFIED, SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, SPAN_KIND_CLIENT, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER`},
		{"kind unknown name", spanLine("kind", "CLIENT"), 1, "kind", `…"kind" is "CLIENT"; it must be a number from 0 to 5…`},
		{"kind as text number", spanLine("kind", "1"), 1, "kind", `…"kind" is "1"…`},
		{"status code 3", spanLine("status", map[string]any{"code": 3}), 1, "status.code", `TRACE_SPANS_PATH line 1: "status.code" is 3; it must be a number from 0 to 2 or one of the names STATUS_CODE_UNSET, STATUS_CODE_OK, STATUS_CODE_ERROR`},
		{"status a string", spanLine("status", "error"), 1, "status", `TRACE_SPANS_PATH line 1: "status" is a JSON string; it must be an object such as {"code": 2, "message": "..."}`},
		{"status message a number", spanLine("status", map[string]any{"message": 1}), 1, "status.message", `…"status.message" is a JSON number; it must be a string`},
		{"attributes an object", spanLine("attributes", map[string]any{"k": "v"}), 1, "attributes", `TRACE_SPANS_PATH line 1: "attributes" is a JSON object; it must be an array of {"key": K, "value": {"stringValue": V}} objects`},
		{"65 attributes", spanLine("attributes", many), 1, "attributes", `TRACE_SPANS_PATH line 1: "attributes" has 65 entries, more than 64; record fewer`},
		{"key missing", attr(map[string]any{"value": map[string]any{"boolValue": true}}), 1, "attributes[0].key", `TRACE_SPANS_PATH line 1: "attributes[0].key" is missing or empty; name the attribute (1 to 128 bytes)`},
		{"key long", attr(map[string]any{"key": strings.Repeat("k", 129), "value": map[string]any{"boolValue": true}}), 1, "attributes[0].key", `…"attributes[0].key" "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"… is 129 bytes long, more than 128; shorten it`},
		{"key a number", attr(map[string]any{"key": 1}), 1, "attributes[0].key", `TRACE_SPANS_PATH line 1: "attributes[0].key" is a JSON number; it must be a string`},
		{"attribute not an object", spanLine("attributes", []any{"k=v"}), 1, "attributes[0]", `TRACE_SPANS_PATH line 1: "attributes[0]" is a JSON string; it must be an object {"key": K, "value": {"stringValue": V}}`},
		{"value missing", attr(map[string]any{"key": "k"}), 1, "attributes[0].value", `TRACE_SPANS_PATH line 1: "attributes[0].value" holds none of "stringValue", "intValue", "boolValue", "doubleValue"; give one (arrays, maps and bytes are not supported: write them as a string)`},
		{"value an array", val(map[string]any{"arrayValue": map[string]any{}}), 1, "attributes[0].value", `…holds none of "stringValue"…`},
		{"value a string", val("x"), 1, "attributes[0].value", `TRACE_SPANS_PATH line 1: "attributes[0].value" is a JSON string; it must be an object such as {"stringValue": V}`},
		{"two values", val(map[string]any{"stringValue": "x", "boolValue": true}), 1, "attributes[0].value", `TRACE_SPANS_PATH line 1: "attributes[0].value" holds both "boolValue" and "stringValue"; give one`},
		{"stringValue a number", val(map[string]any{"stringValue": 1}), 1, "attributes[0].value.stringValue", `TRACE_SPANS_PATH line 1: "attributes[0].value.stringValue" is 1; it must be a JSON string`},
		{"intValue a float", val(map[string]any{"intValue": 1.5}), 1, "attributes[0].value.intValue", `TRACE_SPANS_PATH line 1: "attributes[0].value.intValue" is 1.5; it must be an integer from -2^63 to 2^63-1, as a JSON string or number`},
		{"intValue too large", val(map[string]any{"intValue": "9223372036854775808"}), 1, "attributes[0].value.intValue", `…is "9223372036854775808"; it must be an integer…`},
		{"intValue true", val(map[string]any{"intValue": true}), 1, "attributes[0].value.intValue", `…is true; it must be an integer…`},
		{"boolValue a string", val(map[string]any{"boolValue": "true"}), 1, "attributes[0].value.boolValue", `TRACE_SPANS_PATH line 1: "attributes[0].value.boolValue" is "true"; it must be true or false`},
		{"doubleValue a string", val(map[string]any{"doubleValue": "NaN"}), 1, "attributes[0].value.doubleValue", `TRACE_SPANS_PATH line 1: "attributes[0].value.doubleValue" is "NaN"; it must be a finite JSON number`},
		{"doubleValue too large", val(map[string]any{"doubleValue": json.RawMessage("1e999")}), 1, "attributes[0].value.doubleValue", `…is 1e999; it must be a finite JSON number`},
		{"second attribute", spanLine("attributes", []any{
			map[string]any{"key": "a", "value": map[string]any{"boolValue": true}},
			map[string]any{"key": "", "value": map[string]any{"boolValue": true}}}), 1, "attributes[1].key", `…"attributes[1].key" is missing or empty…`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, err := Parse([]byte(tc.data), trace, run)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %d spans, error %v; want an *Error", len(spans), err)
			}
			if spans != nil {
				t.Errorf("spans returned with the error: %v", spans)
			}
			if e.Line != tc.line || e.Field != tc.field {
				t.Errorf("line %d, field %q; want line %d, field %q", e.Line, e.Field, tc.line, tc.field)
			}
			if !matches(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant\n  %s", err, tc.want)
			}
		})
	}
}

// matches compares a message with want, whose leading or trailing "…"
// stands for any text.
func matches(got, want string) bool {
	switch pre, suf := strings.HasPrefix(want, "…"), strings.HasSuffix(want, "…"); {
	case pre && suf:
		return strings.Contains(got, strings.TrimSuffix(strings.TrimPrefix(want, "…"), "…"))
	case pre:
		return strings.HasSuffix(got, strings.TrimPrefix(want, "…"))
	case suf:
		return strings.HasPrefix(got, strings.TrimSuffix(want, "…"))
	}
	return got == want
}

// TestParseFileLimits: at most MaxSpans spans and MaxBytes bytes.
func TestParseFileLimits(t *testing.T) {
	var b strings.Builder
	for i := range MaxSpans {
		fmt.Fprintf(&b, "%s\n", spanLine("spanId", fmt.Sprintf("%016x", i+1)))
	}
	if spans, err := Parse([]byte(b.String()), trace, run); err != nil || len(spans) != MaxSpans {
		t.Fatalf("%d spans: %d read, %v", MaxSpans, len(spans), err)
	}
	b.WriteString("\n" + spanLine("spanId", "ffffffffffffffff"))
	_, err := Parse([]byte(b.String()), trace, run)
	if want := "TRACE_SPANS_PATH line 1002: span 1001, more than the 1000 a run may record; record fewer spans (one for a batch of objects rather than one for each)"; err == nil || err.Error() != want {
		t.Errorf("1001 spans: %v\nwant %s", err, want)
	}

	big := []byte(spanLine() + strings.Repeat(" ", MaxBytes))
	_, err = Parse(big, trace, run)
	if want := fmt.Sprintf("TRACE_SPANS_PATH: the file holds %d bytes, more than the 1048576 (1 MiB) a run may write; record fewer spans, or shorter attributes", len(big)); err == nil || err.Error() != want {
		t.Errorf("%d bytes: %v\nwant %s", len(big), err, want)
	}
	if _, err := Parse(big[:MaxBytes], trace, run); err != nil {
		t.Errorf("%d bytes: %v", MaxBytes, err)
	}
}

// TestParseBadArguments: a malformed TRACEPARENT part is the caller's
// mistake, not an *Error about the file.
func TestParseBadArguments(t *testing.T) {
	for _, args := range [][2]string{{"", run}, {strings.ToUpper(trace), run}, {trace, run + "0"}, {trace, "x"}} {
		_, err := Parse([]byte(spanLine()), args[0], args[1])
		var e *Error
		if err == nil || errors.As(err, &e) || !strings.HasPrefix(err.Error(), "hookspan: ") {
			t.Errorf("Parse(%q, %q): %v", args[0], args[1], err)
		}
	}
}

// TestParseReusesNothingAcrossLines: a field of one line never shows in
// the next (the decoder's buffers are reused).
func TestParseReusesNothingAcrossLines(t *testing.T) {
	data := spanLine("attributes", []any{map[string]any{"key": "a", "value": map[string]any{"stringValue": "x"}}}, "kind", 2, "status", map[string]any{"code": 2, "message": "m"}) + "\n" +
		spanLine("spanId", "2222222222222222", "attributes", []any{map[string]any{"key": "b", "value": map[string]any{"intValue": 1}}})
	spans, err := Parse([]byte(data), trace, run)
	if err != nil {
		t.Fatal(err)
	}
	s := spans[1]
	if s.Kind != 0 || s.StatusCode != 0 || s.StatusMessage != "" || !reflect.DeepEqual(s.Attributes, []Attr{{"b", int64(1)}}) ||
		!reflect.DeepEqual(spans[0].Attributes, []Attr{{"a", "x"}}) {
		t.Errorf("second span %+v, first's attributes %v", s, spans[0].Attributes)
	}
}

func BenchmarkParse(b *testing.B) {
	var buf strings.Builder
	for i := range 200 {
		parent := run
		if i%2 == 1 {
			parent = fmt.Sprintf("%016x", i)
		}
		fmt.Fprintf(&buf, "%s\n", spanLine("spanId", fmt.Sprintf("%016x", i+1), "parentSpanId", parent, "kind", 1,
			"attributes", []any{map[string]any{"key": "k8s.namespace", "value": map[string]any{"stringValue": "default"}},
				map[string]any{"key": "count", "value": map[string]any{"intValue": "3"}}}))
	}
	data := []byte(buf.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, trace, run); err != nil {
			b.Fatal(err)
		}
	}
}
