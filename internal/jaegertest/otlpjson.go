package jaegertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The API v3's answer: {"result": TracesData}, TracesData in OTLP's JSON
// encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
// IDs in hex, 64-bit integers as strings, enums as numbers. Jaeger v1.75
// writes it with the Collector's pdata encoder, which keeps the parent ID,
// the links (with their attributes) and the status as the exporter sent
// them; the classic /api/traces instead turns them into Jaeger tags and
// CHILD_OF/FOLLOWS_FROM references, and drops a link to the parent.
type otlpAnswer struct {
	Result struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []otlpKeyValue `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	} `json:"result"`
}

type otlpSpan struct {
	TraceID           string          `json:"traceId"`
	SpanID            string          `json:"spanId"`
	ParentSpanID      string          `json:"parentSpanId"`
	Name              string          `json:"name"`
	Kind              json.RawMessage `json:"kind"`
	StartTimeUnixNano json.RawMessage `json:"startTimeUnixNano"`
	EndTimeUnixNano   json.RawMessage `json:"endTimeUnixNano"`
	Attributes        []otlpKeyValue  `json:"attributes"`
	Links             []struct {
		TraceID    string         `json:"traceId"`
		SpanID     string         `json:"spanId"`
		Attributes []otlpKeyValue `json:"attributes"`
	} `json:"links"`
	Status struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"status"`
}

type otlpKeyValue struct {
	Key   string                     `json:"key"`
	Value map[string]json.RawMessage `json:"value"` // one of stringValue, intValue, …
}

// parseTraces reads an API v3 answer into traces, grouped by trace ID
// (the answer puts all of them into one TracesData), oldest first, each
// one's spans by start time.
func parseTraces(body []byte) ([]Trace, error) {
	var a otlpAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("decode the traces: %w", err)
	}
	byID := map[string]*Trace{}
	var order []*Trace
	for _, rs := range a.Result.ResourceSpans {
		service := attributes(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, in := range ss.Spans {
				s, err := span(in, service)
				if err != nil {
					return nil, err
				}
				tr := byID[s.TraceID]
				if tr == nil {
					tr = &Trace{ID: s.TraceID}
					byID[s.TraceID] = tr
					order = append(order, tr)
				}
				tr.Spans = append(tr.Spans, s)
			}
		}
	}
	traces := make([]Trace, len(order))
	for i, tr := range order {
		slices.SortStableFunc(tr.Spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
		traces[i] = *tr
	}
	slices.SortStableFunc(traces, func(a, b Trace) int { return a.Spans[0].Start.Compare(b.Spans[0].Start) })
	return traces, nil
}

func span(in otlpSpan, service string) (Span, error) {
	start, err := unixNano(in.StartTimeUnixNano)
	if err != nil {
		return Span{}, fmt.Errorf("span %s: startTimeUnixNano: %w", in.SpanID, err)
	}
	end, err := unixNano(in.EndTimeUnixNano)
	if err != nil {
		return Span{}, fmt.Errorf("span %s: endTimeUnixNano: %w", in.SpanID, err)
	}
	s := Span{
		TraceID:       strings.ToLower(in.TraceID),
		SpanID:        strings.ToLower(in.SpanID),
		ParentSpanID:  strings.ToLower(in.ParentSpanID),
		Name:          in.Name,
		Service:       service,
		Kind:          kind(in.Kind),
		Start:         start,
		Duration:      end.Sub(start),
		Attributes:    attributes(in.Attributes),
		StatusError:   statusError(in.Status.Code),
		StatusMessage: in.Status.Message,
	}
	for _, l := range in.Links {
		s.Links = append(s.Links, SpanRef{TraceID: strings.ToLower(l.TraceID), SpanID: strings.ToLower(l.SpanID), Attributes: attributes(l.Attributes)})
	}
	return s, nil
}

// unixNano reads a time in nanoseconds since the epoch, a string or a
// number in JSON; absent is the zero time.
func unixNano(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(strings.Trim(string(raw), `"`), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, n), nil
}

var kinds = []string{"", "internal", "server", "client", "producer", "consumer"}

// kind names a span kind, given as its number or its enum name.
func kind(raw json.RawMessage) string {
	v := strings.Trim(string(raw), `"`)
	if n, err := strconv.Atoi(v); err == nil {
		if n >= 0 && n < len(kinds) {
			return kinds[n]
		}
		return v
	}
	return strings.ToLower(strings.TrimPrefix(v, "SPAN_KIND_"))
}

// statusError tells whether a status code, a number or an enum name, is Error (2).
func statusError(raw json.RawMessage) bool {
	v := strings.Trim(string(raw), `"`)
	return v == "2" || v == "STATUS_CODE_ERROR"
}

// attributes writes each value as text: see Span.Attributes.
func attributes(kvs []otlpKeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v map[string]json.RawMessage) string {
	for _, k := range []string{"stringValue", "intValue", "boolValue", "doubleValue"} {
		raw, ok := v[k]
		if !ok {
			continue
		}
		if k == "stringValue" {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
		return strings.Trim(string(raw), `"`)
	}
	for _, raw := range v { // arrayValue, kvlistValue, bytesValue
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String()
		}
		return string(raw)
	}
	return ""
}
