package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The debug routes on the TCP listener answer the command-line tools
// (an IP address or localhost as Host, no Origin, DebugHeader on a POST)
// and refuse, 403 with the reason, what a web page could send: a
// rebound name as Host, another site's Origin, a POST without the header.
func TestGuardDebug(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("served")) })
	for _, tc := range []struct {
		name, listen, method, host, origin string
		header                             bool
		want                               int
		why                                string
	}{
		{"loopback", ":9115", "GET", "127.0.0.1:9115", "", false, 200, ""},
		{"localhost", ":9115", "GET", "localhost:9115", "", false, 200, ""},
		{"localhost with a trailing dot", ":9115", "GET", "LOCALHOST.:9115", "", false, 200, ""},
		{"the Pod's address", "0.0.0.0:9115", "GET", "10.244.1.7:9115", "", false, 200, ""},
		{"IPv6", "[::]:9115", "GET", "[fd00::7]:9115", "", false, 200, ""},
		{"the listen address's name", "op.internal:9115", "GET", "op.internal:9115", "", false, 200, ""},
		{"POST with the header", ":9115", "POST", "127.0.0.1:9115", "", true, 200, ""},
		{"same origin", ":9115", "POST", "127.0.0.1:9115", "http://127.0.0.1:9115", true, 200, ""},
		{"a rebound name", ":9115", "GET", "evil.example:9115", "", false, 403, "DNS rebinding"},
		{"a rebound name, POST", ":9115", "POST", "evil.example:9115", "http://evil.example:9115", true, 403, "DNS rebinding"},
		{"a name that only starts like localhost", ":9115", "GET", "localhost.evil.example", "", false, 403, "DNS rebinding"},
		{"no Host", ":9115", "GET", "", "", false, 403, "DNS rebinding"},
		{"another site", ":9115", "POST", "127.0.0.1:9115", "https://evil.example", true, 403, "web pages"},
		{"an opaque origin", ":9115", "GET", "127.0.0.1:9115", "null", false, 403, "web pages"},
		{"POST without the header", ":9115", "POST", "127.0.0.1:9115", "", false, 403, DebugHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/debug/trigger?hook=x", nil)
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.header {
				req.Header.Set(DebugHeader, "1")
			}
			rec := httptest.NewRecorder()
			guardDebug(ok, tc.listen).ServeHTTP(rec, req)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.why) {
				t.Errorf("%s %s Host %q Origin %q: %d %q, want %d with %q", tc.method, req.URL, tc.host, tc.origin, rec.Code, rec.Body, tc.want, tc.why)
			}
		})
	}
}
