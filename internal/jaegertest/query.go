package jaegertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Trace is one trace as Jaeger stored it: its spans, from any services,
// ordered by start time.
type Trace struct {
	ID    string // 32 lowercase hex digits
	Spans []Span
}

// Span is one span of a Trace. IDs are lowercase hex, as the OTLP JSON
// encoding and the W3C traceparent header write them.
type Span struct {
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root span
	Name         string
	Service      string // the resource's service.name
	Kind         string // "internal", "server", "client", "producer", "consumer", or "" if unset
	Start        time.Time
	Duration     time.Duration
	// Attributes are the span's own (not the resource's), each value
	// written as text: strings as they are, booleans "true" or "false",
	// numbers in decimal, arrays, maps and bytes as their OTLP JSON.
	Attributes    map[string]string
	StatusError   bool   // the status code is Error
	StatusMessage string // the status description
	Links         []SpanRef
}

// SpanRef is a link from a span to another span, maybe of another trace.
type SpanRef struct {
	TraceID    string
	SpanID     string
	Attributes map[string]string // the link's attributes, as Span.Attributes
}

// Span returns the first span named name, or nil.
func (tr Trace) Span(name string) *Span {
	for i := range tr.Spans {
		if tr.Spans[i].Name == name {
			return &tr.Spans[i]
		}
	}
	return nil
}

// ErrNotFound is what Trace returns, wrapped, for a trace Jaeger does not hold.
var ErrNotFound = errors.New("not found in Jaeger")

// maxTraces is what the in-memory storage keeps, and the most a search
// may ask for (the storage refuses more).
const maxTraces = 100000

// Traces returns every trace that has a span of service, oldest first.
// It reads the query service's API v3 (GET /api/v3/traces), raw: without
// the adjustments the UI gets (clock skew and the like).
func (j *Jaeger) Traces(ctx context.Context, service string) ([]Trace, error) {
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {time.Unix(0, 0).UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(maxTraces)},
		"query.raw_traces":     {"true"},
	}
	traces, err := j.get(ctx, "/api/v3/traces?"+q.Encode())
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return traces, err
}

// Trace returns the trace with the given ID (hex), or an error that wraps
// ErrNotFound if Jaeger has none (yet).
func (j *Jaeger) Trace(ctx context.Context, traceID string) (Trace, error) {
	traces, err := j.get(ctx, "/api/v3/traces/"+url.PathEscape(traceID)+"?raw_traces=true")
	if err != nil {
		return Trace{}, fmt.Errorf("trace %s: %w", traceID, err)
	}
	for _, tr := range traces {
		if tr.ID == strings.ToLower(traceID) {
			return tr, nil
		}
	}
	return Trace{}, fmt.Errorf("trace %s: %w (the answer holds %d other traces)", traceID, ErrNotFound, len(traces))
}

// WaitTrace polls Traces of service until one of them satisfies pred, and
// returns it; it fails t if none does within timeout. Spans arrive when
// the exporter sends them, so a test that waits for a whole trace says
// what whole means in pred (such as the number of spans).
func (j *Jaeger) WaitTrace(t testing.TB, ctx context.Context, service string, pred func(Trace) bool, timeout time.Duration) Trace {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last []Trace
	var lastErr error
	for {
		traces, err := j.Traces(ctx, service)
		if err == nil {
			last, lastErr = traces, nil
			for _, tr := range traces {
				if pred(tr) {
					return tr
				}
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("jaegertest: no trace of service %q as wanted within %s (%v); last error: %v; traces seen:\n%s",
				service, timeout, ctx.Err(), lastErr, summary(last))
			return Trace{}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// summary lists traces by ID with their spans' names, for failures.
func summary(traces []Trace) string {
	if len(traces) == 0 {
		return "  none"
	}
	var b strings.Builder
	for _, tr := range traces {
		names := make([]string, len(tr.Spans))
		for i, s := range tr.Spans {
			names[i] = s.Name
		}
		fmt.Fprintf(&b, "  %s: %s\n", tr.ID, strings.Join(names, ", "))
	}
	return b.String()
}

// get asks the API v3 for traces. Its answer is OTLP's JSON encoding of
// the spans wrapped in "result", all traces together; a search that finds
// nothing and an unknown trace ID are both a 404 with a JSON error, which
// get returns as ErrNotFound.
func (j *Jaeger) get(ctx context.Context, path string) ([]Trace, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				HTTPCode int    `json:"httpCode"`
				Message  string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error.HTTPCode == http.StatusNotFound {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	traces, err := parseTraces(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return traces, nil
}
