package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientCert makes a CA and a client certificate it signs; it writes the
// CA to dir/client-ca.crt and returns the client's pair.
func clientCert(t *testing.T, dir string) tls.Certificate {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := os.WriteFile(filepath.Join(dir, "client-ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With client CAs (VALIDATING_WEBHOOK_CLIENT_CA), the server answers only
// clients with a certificate one of them signed; a client without one
// fails its handshake, which is logged (JSON, with the client's address)
// and counted.
func TestServeRequiresClientCertificate(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, 1)
	client := clientCert(t, dir)
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
	addr, err := Serve(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ServeOptions{Certificate: certs.GetCertificate, ClientCAs: pool, Rejected: rejected.add, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	get := func(certs ...tls.Certificate) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		resp, err := c.Get("https://" + addr.String() + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(client); err != nil {
		t.Errorf("a client with a certificate of the client CA: %v", err)
	}
	if err := get(); err == nil {
		t.Errorf("a client without a certificate was answered")
	}
	waitFor(t, "the failed handshake counted and logged", func() bool {
		return rejected.count("tls_handshake") == 1 && strings.Contains(logs.String(), `"msg":"TLS handshake failed"`)
	}, logs.String)
	if !strings.Contains(logs.String(), `"client":"127.0.0.1:`) {
		t.Errorf("the handshake failure's log does not name the client:\n%s", logs.String())
	}
	if _, err := ClientCAs([]string{filepath.Join(dir, "tls.key")}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a client CA file without a certificate: %v", err)
	}
}
