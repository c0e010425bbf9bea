// Package testcert makes the certificates that tests serve and present: a
// CA of the test's own, serving certificates for 127.0.0.1 that it signs,
// and client certificates. Keys are ECDSA P-256, and every certificate is
// valid from an hour ago for a day, so that a clock a little off does not
// matter.
package testcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that lives as long as the test.
type CA struct {
	// PEM is the CA's certificate, for a --webhook-ca or client-CA file.
	PEM  []byte
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(1, "hook-operator test CA")
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der := sign(t, tmpl, tmpl, key.Public(), key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcert: %v", err)
	}
	return &CA{PEM: pemBlock("CERTIFICATE", der), cert: cert, key: key}
}

// Pool is a certificate pool that holds the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// WriteServing writes a serving certificate for 127.0.0.1 with serial,
// signed by the CA, to dir/tls.crt and its key to dir/tls.key. The key is
// written first, so that a server that reloads on a change of the
// certificate finds the matching key.
func (ca *CA) WriteServing(t testing.TB, dir string, serial int64) {
	t.Helper()
	key := newKey(t)
	tmpl := template(serial, "127.0.0.1")
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der := sign(t, tmpl, ca.cert, key.Public(), ca.key)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("testcert: %v", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", pemBlock("EC PRIVATE KEY", keyDER)}, {"tls.crt", pemBlock("CERTIFICATE", der)}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			t.Fatalf("testcert: %v", err)
		}
	}
}

// Client returns a client certificate (common name kube-apiserver, as the
// API server presents to webhooks) signed by the CA.
func (ca *CA) Client(t testing.TB) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := template(7, "kube-apiserver")
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return tls.Certificate{Certificate: [][]byte{sign(t, tmpl, ca.cert, key.Public(), ca.key)}, PrivateKey: key}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcert: %v", err)
	}
	return key
}

func template(serial int64, name string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatalf("testcert: %v", err)
	}
	return der
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
