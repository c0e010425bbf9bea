package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
)

// SecureMetrics serves /metrics (and /metrics/hooks) over HTTPS to callers
// that the API server vouches for, as kubebuilder's scaffolds do with
// controller-runtime's filters: the bearer token is checked by a TokenReview,
// and its user's right to GET the path (a non-resource URL) by a
// SubjectAccessReview. docs/design/process.md, "Secure metrics", says why the
// reviews are written here rather than taken from k8s.io/apiserver.
type SecureMetrics struct {
	// Address is host:port of the HTTPS listener (":8443").
	Address string
	// CertFile and KeyFile are the serving certificate and key (PEM);
	// empty makes a self-signed certificate when the listener starts.
	CertFile, KeyFile string
	// Client asks the API server for the reviews (the dynamic client the
	// operator has: the typed clientset would add every API group's types
	// to the binary for two requests).
	Client dynamic.Interface
	// Reviewed, when not nil, is told of each review a request needed:
	// review "token" (TokenReview) or "access" (SubjectAccessReview), and
	// its result: allowed, denied or error when the API server was asked;
	// cached when it was not (the answer was remembered, or shared with a
	// request asking at the same time); throttled when it was not because
	// of the rate limit (the request is answered 429). See reviewer.
	Reviewed func(review, result string)
}

// cipherSuites are the TLS 1.2 suites the listener accepts: the webhook
// port's (webhook.CipherSuites, which a test holds this list to), ECDHE
// with AES-GCM or ChaCha20-Poly1305 only. TLS 1.3's suites are all AEAD.
// The list is written here, not imported: the metrics listener does not
// depend on the webhook server.
var cipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// reviewTimeout bounds each review.
const reviewTimeout = 10 * time.Second

// startSecure serves the metrics routes of opts on sm's HTTPS listener
// until ctx ends, and returns its address.
func startSecure(ctx context.Context, sm *SecureMetrics, opts Options, log logrus.FieldLogger) (string, error) {
	cert, err := sm.certificate()
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", sm.Address)
	if err != nil {
		return "", fmt.Errorf("--metrics-secure-address %s: %w", sm.Address, err)
	}
	rv := newReviewer(sm.Client, sm.Reviewed, log)
	mux := http.NewServeMux()
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", rv.authorize(opts.Metrics))
	}
	if opts.HookMetrics != nil {
		mux.Handle("GET /metrics/hooks", rv.authorize(opts.HookMetrics))
	}
	tlsLn := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, CipherSuites: cipherSuites})
	serve(ctx, tlsLn, mux, limits(opts, false), log)
	return ln.Addr().String(), nil
}

func (sm *SecureMetrics) certificate() (tls.Certificate, error) {
	if sm.CertFile != "" || sm.KeyFile != "" {
		if sm.CertFile == "" || sm.KeyFile == "" {
			return tls.Certificate{}, errors.New("--metrics-cert and --metrics-key go together: set both, or neither for a self-signed certificate")
		}
		cert, err := tls.LoadX509KeyPair(sm.CertFile, sm.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("--metrics-cert %s, --metrics-key %s: %w", sm.CertFile, sm.KeyFile, err)
		}
		return cert, nil
	}
	return selfSigned()
}

// selfSigned makes a certificate for the listener, valid for a year; a
// scraper that does not pin it sets insecureSkipVerify, as kubebuilder's
// ServiceMonitor does.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "hook-operator metrics"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// tokenID is a short hash of a token, for logs.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return fmt.Sprintf("sha256:%x", sum[:4])
}
