package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A request to a path no binding serves is answered 404 before its body
// is read, counted as not_found, and logged sampled with its path cut and
// escaped: 3,000 of them with paths of 2 KB holding escape sequences and
// newlines make 10 short lines of log, not 3,000 long ones.
func TestGateAnswersUnknownPathsNotFound(t *testing.T) {
	handled := false
	g, rejected, logs := testGate(NewSlots(4, 0), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
	g.served = func(path string) bool { return path == "/hooks/known" }
	path := "/hooks/nope-\x1b[2J\r\nforged-" + strings.Repeat("a", 2048)
	for range 3000 {
		body := &bodyReader{r: strings.NewReader(review)}
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || body.wasRead() {
			t.Fatalf("a request to an unknown path: %d (body read: %t), want 404 unread", rec.Code, body.wasRead())
		}
	}
	if handled {
		t.Error("a request to an unknown path reached the handler")
	}
	if n := rejected.count("not_found"); n != 3000 {
		t.Errorf("counted %d not_found, want 3000", n)
	}
	log := logs.String()
	if lines := strings.Count(log, "\n"); lines != 10 || len(log) > 10*1024 {
		t.Errorf("3,000 unknown paths logged %d lines, %d bytes; want the 10 of a burst, short:\n%.2000s", lines, len(log), log)
	}
	if strings.Contains(log, "\x1b") || strings.Contains(log, `\r\nforged`) || !strings.Contains(log, `nope-\\x1b[2J\\r\\nforged-aaa`) {
		t.Errorf("the path is not escaped in the log:\n%.600s", log)
	}
}
