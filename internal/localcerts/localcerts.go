// Package localcerts makes a CA, serving certificates for 127.0.0.1 that
// it signs, and client certificates: for the harnesses (bench, soak) whose
// operators serve webhooks that the local API server reaches by URL, and
// for the tests of those webhooks. Keys are ECDSA P-256 (RSA where a test
// asks for it), and every certificate is valid from an hour ago for a day.
package localcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	return ca.writeServing(dir, serial, key)
}

// WriteServingRSA is WriteServing with a 2048-bit RSA key, for the tests
// of what a server with an RSA certificate negotiates (its TLS suites).
func (ca *CA) WriteServingRSA(dir string, serial int64) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return ca.writeServing(dir, serial, key)
}

func (ca *CA) writeServing(dir string, serial int64, key crypto.Signer) error {
	tmpl := template(serial, "127.0.0.1")
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := ca.sign(tmpl, key)
	if err != nil {
		return err
	}
	keyPEM, err := privateKeyPEM(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.crt"), pemBlock("CERTIFICATE", der), 0o600)
}

// privateKeyPEM encodes an ECDSA key as SEC 1 ("EC PRIVATE KEY") and an
// RSA key as PKCS #1 ("RSA PRIVATE KEY").
func privateKeyPEM(key crypto.Signer) ([]byte, error) {
	if k, ok := key.(*rsa.PrivateKey); ok {
		return pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k)), nil
	}
	der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

// Client returns a client certificate (common name kube-apiserver, as the
// API server presents to webhooks) signed by the CA.
func (ca *CA) Client() (tls.Certificate, error) {
	tmpl := template(7, "kube-apiserver")
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := ca.sign(tmpl, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// sign makes a certificate from tmpl for key, signed by the CA.
func (ca *CA) sign(tmpl *x509.Certificate, key crypto.Signer) ([]byte, error) {
	return x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
}

func template(serial int64, name string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
