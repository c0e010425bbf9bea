package webhook

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// A URL of this host must name the port of the listener that serves its
// kind of review; one naming the other listener's port says so, and a URL
// of another host is not judged (a forwarded port may reach the listener).
func TestTargetCheckURL(t *testing.T) {
	conversion := target{what: "conversion", settings: "--conversion-webhook-url", port: 9681, otherPort: 9680, otherWhat: "admission"}
	for _, c := range []struct {
		url, want string
	}{
		{"https://127.0.0.1:9681", ""},
		{"https://localhost:9681", ""},
		{"https://127.0.0.1:9680", "port 9680 of this host is the admission listener, which does not serve conversion reviews: the conversion listener serves on port 9681; set --conversion-webhook-url to https://127.0.0.1:9681"},
		{"https://127.0.0.1", "port 443 of this host is no webhook listener"},
		{"https://[::1]:1234", "set --conversion-webhook-url to https://[::1]:9681"},
		{"https://webhooks.example.com:9680", ""},
		{"https://192.0.2.10:9680", ""},
	} {
		u := conversion
		u.url = c.url
		got := u.checkURL()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want one with %q", c.url, got, c.want)
		}
		if got != "" && !strings.Contains(got, c.url) {
			t.Errorf("%s: the message does not name the URL: %q", c.url, got)
		}
	}
}

// A listener without its certificate files fails with the flags to set,
// and says how a local run gets certificates without files.
func TestMissingCertificateSaysSelfSigned(t *testing.T) {
	s, err := NewServer(Options{ListenAddress: "127.0.0.1:0", MaxConnections: 1, TLSMinVersion: "1.2", FailurePolicy: "Fail"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = s.serve(context.Background(), listener{flag: "webhook", what: "admission", address: "127.0.0.1:0",
		cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}, http.NotFoundHandler())
	for _, want := range []string{"--webhook-cert, --webhook-key", "tls.crt", "--webhook-self-signed", "--webhook-url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q in it", err, want)
		}
	}
}
