package hookspan

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics; an error is an *Error on a line of the
// file; and when it returns spans, every rule of the contract holds for
// them, and writing them out again reads back the same.
func FuzzParse(f *testing.F) {
	nested := spanLine("spanId", "2222222222222222", "parentSpanId", "1111111111111111", "kind", "SPAN_KIND_CLIENT",
		"attributes", []any{
			map[string]any{"key": "s", "value": map[string]any{"stringValue": "x\u00e9\n"}},
			map[string]any{"key": "i", "value": map[string]any{"intValue": "-12"}},
			map[string]any{"key": "b", "value": map[string]any{"boolValue": false}},
			map[string]any{"key": "d", "value": map[string]any{"doubleValue": 2.5}},
		}, "status", map[string]any{"code": 2, "message": "exit 1"})
	for _, seed := range []string{
		"", "\n", "{}", "[]", "null", `{"traceId":1}`, spanLine(), spanLine() + "\n" + nested, nested + "\r\n" + spanLine(),
		spanLine("kind", 9), spanLine("startTimeUnixNano", 9, "endTimeUnixNano", 8),
		spanLine("parentSpanId", "1111111111111111"),
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","parentSpanId":"a3ce929d0e0e4736","name":"call billing","startTimeUnixNano":"1733550000000000000","endTimeUnixNano":"1733550000120000000","attributes":[{"key":"http.status_code","value":{"intValue":"200"}}],"status":{"code":2,"message":"timeout"}}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"a3ce929d0e0e4736","parentSpanId":"00f067aa0ba902b7","name":"n","startTimeUnixNano":1,"endTimeUnixNano":"1","attributes":[{"key":"k","value":{"stringValue":"\ud83d\ude00"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := Parse(data, trace, run)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || spans != nil {
				t.Fatalf("error %v (%T) with %d spans", err, err, len(spans))
			}
			if e.Line < 0 || e.Line > strings.Count(string(data), "\n")+1 || !strings.HasPrefix(err.Error(), "TRACE_SPANS_PATH") {
				t.Fatalf("error on line %d of a file of %d lines: %v", e.Line, strings.Count(string(data), "\n")+1, err)
			}
			return
		}
		checkRules(t, data, spans)
		again, err := Parse([]byte(encode(spans)), trace, run)
		if err != nil || !reflect.DeepEqual(again, spans) && !(len(again) == 0 && len(spans) == 0) {
			t.Fatalf("written out again:\n%s\nreads as %+v, %v\nwant %+v", encode(spans), again, err, spans)
		}
	})
}

// checkRules fails t unless spans keep every rule of the contract.
func checkRules(t *testing.T, data []byte, spans []Span) {
	t.Helper()
	if len(data) > MaxBytes || len(spans) > MaxSpans {
		t.Fatalf("%d bytes, %d spans accepted", len(data), len(spans))
	}
	var tr [16]byte
	hex.Decode(tr[:], []byte(trace))
	seen := map[[8]byte]bool{id8(run): true}
	for i, s := range spans {
		switch {
		case s.TraceID != tr:
			t.Fatalf("span %d: trace %x", i, s.TraceID)
		case s.SpanID == [8]byte{} || seen[s.SpanID]:
			t.Fatalf("span %d: span id %x zero, the run's, or seen before", i, s.SpanID)
		case !seen[s.ParentSpanID]:
			t.Fatalf("span %d: parent %x is neither the run's nor a span before it", i, s.ParentSpanID)
		case s.Name == "" || len(s.Name) > MaxNameBytes || !utf8.ValidString(s.Name):
			t.Fatalf("span %d: name %q", i, s.Name)
		case s.End.Before(s.Start) || s.Start.UnixNano() < 0:
			t.Fatalf("span %d: %v to %v", i, s.Start, s.End)
		case s.Kind < 0 || s.Kind > 5 || s.StatusCode < 0 || s.StatusCode > 2:
			t.Fatalf("span %d: kind %d, status %d", i, s.Kind, s.StatusCode)
		case len(s.Attributes) > MaxAttributes:
			t.Fatalf("span %d: %d attributes", i, len(s.Attributes))
		}
		seen[s.SpanID] = true
		for _, a := range s.Attributes {
			if a.Key == "" || len(a.Key) > MaxKeyBytes || !utf8.ValidString(a.Key) {
				t.Fatalf("span %d: key %q", i, a.Key)
			}
			switch v := a.Value.(type) {
			case string:
				if len(v) > MaxStringValueBytes || !utf8.ValidString(v) {
					t.Fatalf("span %d: value %q", i, v)
				}
			case float64:
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("span %d: value %v", i, v)
				}
			case int64, bool:
			default:
				t.Fatalf("span %d: value %v of type %T", i, v, v)
			}
		}
	}
}

// encode writes spans as a spans file, as a hook would.
func encode(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		attrs := []map[string]any{}
		for _, a := range s.Attributes {
			v := map[string]any{}
			switch x := a.Value.(type) {
			case string:
				v["stringValue"] = x
			case int64:
				v["intValue"] = strconv.FormatInt(x, 10)
			case bool:
				v["boolValue"] = x
			case float64:
				v["doubleValue"] = x
			}
			attrs = append(attrs, map[string]any{"key": a.Key, "value": v})
		}
		line, err := json.Marshal(map[string]any{
			"traceId": hex.EncodeToString(s.TraceID[:]), "spanId": hex.EncodeToString(s.SpanID[:]),
			"parentSpanId": hex.EncodeToString(s.ParentSpanID[:]), "name": s.Name, "kind": s.Kind,
			"startTimeUnixNano": strconv.FormatInt(s.Start.UnixNano(), 10), "endTimeUnixNano": strconv.FormatInt(s.End.UnixNano(), 10),
			"attributes": attrs, "status": map[string]any{"code": s.StatusCode, "message": s.StatusMessage},
		})
		if err != nil {
			panic(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
