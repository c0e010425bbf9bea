package webhook

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hook-operator/hook-operator/internal/localcerts"
)

// clientCert makes a CA and a client certificate it signs; it writes the
// CA to dir/client-ca.crt and returns the client's pair.
func clientCert(t *testing.T, dir string) tls.Certificate {
	t.Helper()
	ca, err := localcerts.NewCA("client CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client-ca.crt"), ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client()
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// With client CAs (VALIDATING_WEBHOOK_CLIENT_CA), the server answers
// reviews only from clients with a certificate one of them signed: a
// client without one is refused before its body is read (401, counted as
// client_certificate, the connection closed), and one with a certificate
// of another CA fails its handshake, which is logged (JSON, with the
// client's address) and counted. GET /healthz is answered without a
// certificate, as a kubelet's HTTPS probe sends none, and reaches no
// handler.
func TestServeRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, 1)
	client := clientCert(t, dir)
	other := clientCert(t, t.TempDir())
	log, logs := jsonLog()
	var rejected reasons
	certs, err := NewCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), log)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := ClientCAs([]string{filepath.Join(dir, "client-ca.crt")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handled atomic.Int32
	addr, err := Serve(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { handled.Add(1); _, _ = io.WriteString(w, "ok") }),
		ServeOptions{Certificate: certs.GetCertificate, ClientCAs: pool, Rejected: rejected.add, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, certs ...tls.Certificate) (int, bool, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		resp, err := c.Get("https://" + addr.String() + path)
		if err != nil {
			return 0, false, err
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Close, nil
	}
	if code, _, err := get("/hooks/x", client); err != nil || code != http.StatusOK {
		t.Errorf("a client with a certificate of the client CA: %d, %v", code, err)
	}
	if code, closed, err := get("/hooks/x"); err != nil || code != http.StatusUnauthorized || !closed {
		t.Errorf("a review without a client certificate: %d (connection closed: %t), %v; want 401, closed", code, closed, err)
	}
	if code, _, err := get(HealthPath); err != nil || code != http.StatusOK {
		t.Errorf("GET %s without a client certificate: %d, %v; want 200", HealthPath, code, err)
	}
	if _, _, err := get("/hooks/x", other); err == nil {
		t.Errorf("a client with a certificate of another CA was answered")
	}
	waitFor(t, "the refusals counted and logged", func() bool {
		return rejected.count("tls_handshake") == 1 && rejected.count("client_certificate") == 1 &&
			strings.Contains(logs.String(), `"msg":"TLS handshake failed"`) && strings.Contains(logs.String(), `"reason":"client_certificate"`)
	}, logs.String)
	if !strings.Contains(logs.String(), `"client":"127.0.0.1:`) {
		t.Errorf("the handshake failure's log does not name the client:\n%s", logs.String())
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1 (the review with a certificate)", n)
	}
	if _, err := ClientCAs([]string{filepath.Join(dir, "tls.key")}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a client CA file without a certificate: %v", err)
	}
}
