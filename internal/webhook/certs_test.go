package webhook

import (
	"context"
	"crypto/tls"
	"io"
	stdlog "log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/localcerts"
)

// writePair writes a serving certificate for 127.0.0.1 with the given
// serial number, and its key, to dir/tls.crt and dir/tls.key, and the
// test CA that signed it, new each time, to dir/ca.crt.
func writePair(t *testing.T, dir string, serial int64) {
	t.Helper()
	if err := writeCA(t, filepath.Join(dir, "ca.crt")).WriteServing(dir, serial); err != nil {
		t.Fatal(err)
	}
}

// writeCA makes a test CA and writes its certificate to path.
func writeCA(t *testing.T, path string) *localcerts.CA {
	t.Helper()
	ca, err := localcerts.NewCA("webhook test CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// servedSerial connects to the server and returns the serial number of the
// certificate it presents.
func servedSerial(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // the test reads the certificate, whatever it is
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// A certificate replaced on disk is served from the next handshake after
// the reloader's look, without a restart; a pair that cannot be loaded
// (half written) leaves the last good one in place; TLS below 1.2 is
// refused.
func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, 1)
	log := logrus.New()
	log.SetOutput(io.Discard)
	r, err := NewCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), log)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	r.now = func() time.Time { return clock }

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: r.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		ErrorLog: stdlog.New(io.Discard, "", 0)} // the refused TLS 1.1 handshake is logged
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()

	if got := servedSerial(t, addr); got != 1 {
		t.Fatalf("serial %d, want 1", got)
	}
	writePair(t, dir, 2)
	if got := servedSerial(t, addr); got != 1 {
		t.Errorf("within a second of the last look: serial %d, want the cached 1", got)
	}
	clock = clock.Add(2 * time.Second)
	if got := servedSerial(t, addr); got != 2 {
		t.Errorf("after a change on disk: serial %d, want 2", got)
	}

	// Half a rotation: the certificate is new, the key still the old one.
	key, err := os.ReadFile(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	writePair(t, dir, 3)
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Second)
	if got := servedSerial(t, addr); got != 2 {
		t.Errorf("with a certificate and key that do not match: serial %d, want the last good 2", got)
	}

	_, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}) // a handshake that must fail
	if err == nil {
		t.Error("a TLS 1.1 handshake succeeded; want TLS 1.2 or newer only")
	}

	if _, err := NewCertReloader(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "tls.key"), log); err == nil {
		t.Error("a missing certificate file must fail at start")
	}
}

// clientCert makes a CA and a client certificate it signs; it writes the
// CA to dir/client-ca.crt and returns the client's pair.
func clientCert(t *testing.T, dir string) tls.Certificate {
	t.Helper()
	client, err := writeCA(t, filepath.Join(dir, "client-ca.crt")).Client()
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
