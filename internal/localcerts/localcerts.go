// Package localcerts makes a CA, serving certificates for 127.0.0.1 that
// it signs, and client certificates: for the harnesses (bench, soak) whose
// operators serve webhooks that the local API server reaches by URL, and
// for the tests of those webhooks. Keys are ECDSA P-256, and every
// certificate is valid from an hour ago for a day.
package localcerts

import (
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
	"time"
)

// Write writes a CA named caName (ca.crt) and a serving certificate and key
// for 127.0.0.1 signed by it (tls.crt, tls.key) to dir, readable by the
// owner only.
func Write(dir, caName string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := NewCA(caName)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca.PEM, 0o600); err != nil {
		return err
	}
	return ca.WriteServing(dir, 2)
}

// CA is a certificate authority of a harness's or a test's own.
type CA struct {
	// PEM is the CA's certificate, for a ca.crt or client-CA file.
	PEM  []byte
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(1, name)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{PEM: pemBlock("CERTIFICATE", der), cert: cert, key: key}, nil
}

// Pool is a certificate pool that holds the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// WriteServing writes a serving certificate for 127.0.0.1 with serial,
// signed by the CA, to dir/tls.crt and its key to dir/tls.key, readable
// by the owner only. The key is written first, so that a server that
// reloads on a change of the certificate finds the matching key.
func (ca *CA) WriteServing(dir string, serial int64) error {
	tmpl := template(serial, "127.0.0.1")
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, key, err := ca.sign(tmpl)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pemBlock("EC PRIVATE KEY", keyDER), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.crt"), pemBlock("CERTIFICATE", der), 0o600)
}

// Client returns a client certificate (common name kube-apiserver, as the
// API server presents to webhooks) signed by the CA.
func (ca *CA) Client() (tls.Certificate, error) {
	tmpl := template(7, "kube-apiserver")
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, key, err := ca.sign(tmpl)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// sign makes a key and a certificate for it from tmpl, signed by the CA.
func (ca *CA) sign(tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	return der, key, err
}

func template(serial int64, name string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
