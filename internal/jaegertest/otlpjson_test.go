package jaegertest

import (
	"reflect"
	"testing"
	"time"
)

// TestParseTraces reads an answer of the API v3 as Jaeger v1.75 writes it
// (the shape TestIntegrationJaegerStoresWhatOTLPSends gets): two traces in
// one TracesData, out of order, grouped and sorted, every field mapped.
func TestParseTraces(t *testing.T) {
	body := `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
"scopeSpans":[{"scope":{"name":"jaegertest"},"spans":[
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b8","parentSpanId":"b7ad6b7169203331","name":"run","kind":1,
 "startTimeUnixNano":"2000","endTimeUnixNano":"5000","attributes":[{"key":"n","value":{"intValue":"3"}},{"key":"b","value":{"boolValue":true}},
 {"key":"f","value":{"doubleValue":1.5}},{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"x"}]}}}],
 "links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","attributes":[{"key":"why","value":{"stringValue":"cause"}}]}],
 "status":{"message":"exit 1","code":2}},
{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"event","startTimeUnixNano":"500","endTimeUnixNano":"600","status":{}},
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"reconcile","kind":2,
 "startTimeUnixNano":"1000","endTimeUnixNano":"9000","status":{"code":1}}]}]}]}}`
	got, err := parseTraces([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Trace{
		{ID: "5b8efff798038103d269b633813fc60c", Spans: []Span{{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174",
			Name: "event", Service: "svc", Start: time.Unix(0, 500), Duration: 100}}},
		{ID: "0af7651916cd43dd8448eb211c80319c", Spans: []Span{
			{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", Name: "reconcile", Service: "svc", Kind: "server",
				Start: time.Unix(0, 1000), Duration: 8000},
			{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00f067aa0ba902b8", ParentSpanID: "b7ad6b7169203331", Name: "run", Service: "svc",
				Kind: "internal", Start: time.Unix(0, 2000), Duration: 3000,
				Attributes:  map[string]string{"n": "3", "b": "true", "f": "1.5", "a": `{"values":[{"stringValue":"x"}]}`},
				StatusError: true, StatusMessage: "exit 1",
				Links: []SpanRef{{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", Attributes: map[string]string{"why": "cause"}}}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTraces:\n got %+v\nwant %+v", got, want)
	}
}
