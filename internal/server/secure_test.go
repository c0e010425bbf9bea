package server_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/server"
)

// A certificate without its key, or files that hold none, are refused at
// start with the flags named.
func TestSecureMetricsCertificateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := logtest.NewNullLogger()
	for _, tc := range []struct {
		cert, key, want string
	}{
		{bad, "", "--metrics-cert and --metrics-key go together"},
		{"", bad, "--metrics-cert and --metrics-key go together"},
		{bad, bad, "--metrics-cert " + bad},
	} {
		_, _, err := server.Start(context.Background(), &fakeOperator{}, server.Options{Address: "127.0.0.1:0",
			Secure: &server.SecureMetrics{Address: "127.0.0.1:0", CertFile: tc.cert, KeyFile: tc.key}}, log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cert %q key %q: %v, want an error with %q", tc.cert, tc.key, err, tc.want)
		}
	}
}

// With Secure, the metrics are served over HTTPS (a self-signed certificate
// without files), a request without a bearer token gets 401 before the API
// server is asked, and the plain listener serves the probes but no metrics.
func TestSecureMetricsWithoutToken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })
	addr, secure, err := server.Start(ctx, &fakeOperator{}, server.Options{Address: "127.0.0.1:0", Metrics: metrics,
		Secure: &server.SecureMetrics{Address: "127.0.0.1:0"}}, log)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get("https://" + secure + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.TLS == nil {
		t.Errorf("no token over HTTPS: %d (TLS %v), want 401", resp.StatusCode, resp.TLS != nil)
	}
	for path, want := range map[string]int{"/metrics": http.StatusNotFound, "/healthz": http.StatusOK} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("plain %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
