package sdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/hook-operator/hook-operator/sdk"
)

// A handler records a span of its own around a call to another service and
// passes the trace on to it. The runtime sets TRACEPARENT and
// TRACE_SPANS_PATH when tracing is on; here the example sets them.
func ExampleStartSpan() {
	dir, _ := os.MkdirTemp("", "spans")
	defer os.RemoveAll(dir)
	os.Setenv(sdk.EnvTraceParent, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	os.Setenv(sdk.EnvTraceSpansPath, filepath.Join(dir, "trace-spans"))
	defer os.Unsetenv(sdk.EnvTraceParent)
	defer os.Unsetenv(sdk.EnvTraceSpansPath)

	handle := func(ctx *sdk.Context) (err error) {
		tctx, span := sdk.StartSpan(context.Background(), "charge", sdk.String("ticket", "ns/t1"))
		defer func() { span.End(err) }()
		req, err := http.NewRequestWithContext(tctx, http.MethodPost, "https://billing.example/charge", nil)
		if err != nil {
			return err
		}
		req.Header.Set("traceparent", sdk.TraceParent(tctx))
		// resp, err := http.DefaultClient.Do(req) ...
		span.SetAttributes(sdk.Int("http.response.status_code", 200))
		return nil
	}
	_ = handle(&sdk.Context{})

	f, _ := os.Open(filepath.Join(dir, "trace-spans"))
	defer f.Close()
	for lines := bufio.NewScanner(f); lines.Scan(); {
		var span struct {
			Name, ParentSpanID string
			Attributes         []struct {
				Key   string
				Value map[string]any
			}
		}
		_ = json.Unmarshal(lines.Bytes(), &span)
		fmt.Println(span.Name, "child of", span.ParentSpanID)
		for _, a := range span.Attributes {
			fmt.Println(" ", a.Key, a.Value)
		}
	}
	// Output:
	// charge child of 00f067aa0ba902b7
	//   ticket map[stringValue:ns/t1]
	//   http.response.status_code map[intValue:200]
}
