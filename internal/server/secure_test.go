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

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/localcerts"
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
		_, err := server.Start(context.Background(), &fakeOperator{}, server.Options{Address: "127.0.0.1:0",
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
	log, _ := logtest.NewNullLogger()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })
	addrs, err := server.Start(t.Context(), &fakeOperator{}, server.Options{Address: "127.0.0.1:0", Metrics: metrics,
		Secure: &server.SecureMetrics{Address: "127.0.0.1:0"}}, log)
	if err != nil {
		t.Fatal(err)
	}
	addr, secure := addrs.Listen, addrs.Secure
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

// The secure metrics port refuses TLS 1.2's CBC and SHA-1 suites, as the
// webhook port does, with its self-signed (ECDSA) certificate and with an
// RSA one, and accepts an AEAD suite.
func TestSecureMetricsRefusesCBCSuites(t *testing.T) {
	log, _ := logtest.NewNullLogger()
	ca, err := localcerts.NewCA("metrics test CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.WriteServingRSA(dir, 1); err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, tc := range []struct {
		name      string
		cert, key string
		cbc, aead uint16
	}{
		{"self-signed ECDSA", "", "", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		{"RSA", cert, key, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
	} {
		addrs, err := server.Start(t.Context(), &fakeOperator{}, server.Options{Secure: &server.SecureMetrics{Address: "127.0.0.1:0", CertFile: tc.cert, KeyFile: tc.key}}, log)
		if err != nil {
			t.Fatal(err)
		}
		dial := func(suite uint16) error {
			c, err := tls.Dial("tcp", addrs.Secure, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}})
			if err == nil {
				c.Close()
			}
			return err
		}
		if err := dial(tc.cbc); err == nil {
			t.Errorf("%s: a TLS 1.2 client offering only %s was accepted", tc.name, tls.CipherSuiteName(tc.cbc))
		}
		if err := dial(tc.aead); err != nil {
			t.Errorf("%s: a TLS 1.2 client offering %s: %v", tc.name, tls.CipherSuiteName(tc.aead), err)
		}
	}
}
