package localcerts_test

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/hook-operator/hook-operator/internal/localcerts"
)

// The serving certificate verifies for 127.0.0.1 against the CA written
// beside it, and every file is the owner's alone.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := localcerts.Write(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	leaf, _ := loadServing(t, dir)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the serving certificate does not verify for 127.0.0.1: %v", err)
	}
	for _, name := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, st.Mode().Perm())
		}
	}
}

// loadServing loads dir/tls.crt with dir/tls.key, and returns the
// certificate and its key.
func loadServing(t *testing.T, dir string) (*x509.Certificate, any) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf, pair.PrivateKey
}

// A serving certificate verifies for 127.0.0.1 (and not for another name)
// against the CA's pool and its PEM, and loads with its key, an RSA one
// when asked; a client certificate verifies for client authentication
// only; two CAs differ.
func TestCACertificatesVerify(t *testing.T) {
	ca, err := localcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	dir, rsaDir := t.TempDir(), t.TempDir()
	if err := ca.WriteServing(dir, 42); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteServingRSA(rsaDir, 43); err != nil {
		t.Fatal(err)
	}
	serving, _ := loadServing(t, dir)
	withRSA, key := loadServing(t, rsaDir)
	if _, ok := key.(*rsa.PrivateKey); !ok || withRSA.SerialNumber.Int64() != 43 {
		t.Errorf("WriteServingRSA: a %T key, serial %v; want RSA, 43", key, withRSA.SerialNumber)
	}
	if serving.SerialNumber.Int64() != 42 {
		t.Errorf("serial %v, want 42", serving.SerialNumber)
	}
	fromPEM := x509.NewCertPool()
	if !fromPEM.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for _, pool := range []*x509.CertPool{ca.Pool(), fromPEM} {
		for _, c := range []*x509.Certificate{serving, withRSA} {
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
				t.Errorf("serving certificate %v for 127.0.0.1: %v", c.SerialNumber, err)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
				t.Errorf("serving certificate %v verified for example.com", c.SerialNumber)
			}
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
