package localcerts_test

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/hook-operator/hook-operator/internal/localcerts"
)

// A serving certificate verifies for 127.0.0.1 (and not for another name)
// against the CA's pool and its PEM, and loads with its key; a client
// certificate verifies for client authentication only; two CAs differ.
func TestCACertificatesVerify(t *testing.T) {
	ca, err := localcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.WriteServing(dir, 42); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	serving, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if serving.SerialNumber.Int64() != 42 {
		t.Errorf("serial %v, want 42", serving.SerialNumber)
	}
	fromPEM := x509.NewCertPool()
	if !fromPEM.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for _, pool := range []*x509.CertPool{ca.Pool(), fromPEM} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
			t.Errorf("serving certificate for 127.0.0.1: %v", err)
		}
		if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
			t.Error("serving certificate verified for example.com")
		}
	}
	cert, err := ca.Client()
	if err != nil {
		t.Fatal(err)
	}
	client, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca.Pool()}); err == nil {
		t.Error("client certificate verified for server authentication")
	}
	other, err := localcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	if other.Pool().Equal(ca.Pool()) {
		t.Error("two CAs are the same")
	}
}
