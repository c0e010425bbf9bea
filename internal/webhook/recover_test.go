package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

// postTLS posts body to path on a webhook server at addr and returns the
// status and the body of the answer, or the error of a dropped
// connection.
func postTLS(t *testing.T, addr, path, body string) (int, string, error) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	resp, err := client.Post("https://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), err
}

// A panic while an admission or conversion request is handled is answered
// with a 500 that says so, where net/http alone drops the connection; it
// is logged with its stack and counted with reason "panic", and the
// server goes on answering.
func TestServeAnswersARequestThatPanicked(t *testing.T) {
	log, logs := jsonLog()
	rejected := &reasons{}
	calls := 0
	admission := &AdmissionHandler{Log: log, Run: func(context.Context, string, json.RawMessage) (*AdmissionResponse, error) {
		calls++
		if calls == 1 {
			var m map[string]string
			m["boom"] = "" // a nil map: a bug's panic
		}
		return &AdmissionResponse{Allowed: true}, nil
	}}
	conversion := func(context.Context, string, ConversionRequest) ([]json.RawMessage, error) {
		panic("conversion bug")
	}
	mux := http.NewServeMux()
	mux.Handle("/hooks/", admission)
	mux.HandleFunc("/crontabs.example.com", func(w http.ResponseWriter, r *http.Request) {
		ServeConversion(w, r, conversion, func(err error, crd string) { log.WithError(err).WithField("crd", crd).Warn("conversion failed") })
	})
	addr := serveTest(t, mux, ServeOptions{Log: log, Rejected: rejected.add})

	code, body, err := postTLS(t, addr, "/hooks/x", review)
	if err != nil || code != http.StatusInternalServerError || !strings.Contains(body, "recovered panic") {
		t.Errorf("an admission request whose handling panicked: %d %q, %v; want a 500 that says so", code, body, err)
	}
	code, body, err = postTLS(t, addr, "/hooks/x", review)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Errorf("the next admission request: %d %q, %v; want it answered", code, body, err)
	}
	convReview := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v2","objects":[]}}`
	code, body, err = postTLS(t, addr, "/crontabs.example.com", convReview)
	if err != nil || code != http.StatusInternalServerError || !strings.Contains(body, "recovered panic") {
		t.Errorf("a conversion request whose handling panicked: %d %q, %v; want a 500 that says so", code, body, err)
	}
	if rejected.count(metrics.WebhookPanic) != 2 {
		t.Errorf("counted with reason %s: %d, want 2 (%v)", metrics.WebhookPanic, rejected.count(metrics.WebhookPanic), rejected.n)
	}
	for _, want := range []string{"assignment to entry in nil map", "conversion bug", "recover_test.go", `"crd":"crontabs.example.com"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q (the panic and its stack):\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), `"uid"`) {
		t.Errorf("the log holds the request:\n%s", logs.String())
	}
}

// A handler that panics with http.ErrAbortHandler still drops the
// connection: that is how it asks for it.
func TestServeKeepsAbortHandler(t *testing.T) {
	h := &AdmissionHandler{Run: func(context.Context, string, json.RawMessage) (*AdmissionResponse, error) {
		panic(http.ErrAbortHandler)
	}}
	addr := serveTest(t, h, ServeOptions{})
	if code, body, err := postTLS(t, addr, "/hooks/x", review); err == nil {
		t.Errorf("a request aborted with http.ErrAbortHandler was answered %d %q; want the connection dropped", code, body)
	}
}
