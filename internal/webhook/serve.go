package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/server/listen"
)

// ServeOptions configure one webhook listener.
type ServeOptions struct {
	// Certificate returns the certificate to serve: a CertReloader's or a
	// MemoryCert's GetCertificate.
	Certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs, when not nil, admit only clients with a certificate one
	// of them signed (the API server's, configured in its admission
	// configuration).
	ClientCAs *x509.CertPool
	// TLS13Only refuses TLS 1.2; otherwise TLS 1.2 is offered with AEAD
	// suites only (see CipherSuites).
	TLS13Only bool
	// Slots bounds the requests that read their body or run a hook at
	// once; listeners of one operator share them. nil: 16 of its own.
	Slots Slots
	// MaxConns caps the open connections (0: 256).
	MaxConns int
	// BodyTimeout bounds the reading of a request's body once it has its
	// slot (0: 10s).
	BodyTimeout time.Duration
	// Rejected, when not nil, is told the reason of each request answered
	// with an error before any hook ran, and of each failed TLS handshake
	// ("tls_handshake").
	Rejected func(reason string)
	Log      logrus.FieldLogger
}

// Slots bounds the webhook requests handled at once: a request takes one
// before its body is read and gives it back when it is answered.
type Slots chan struct{}

// NewSlots returns n slots (at least 1).
func NewSlots(n int) Slots { return make(Slots, max(n, 1)) }

// CipherSuites are the TLS 1.2 suites the webhook server accepts: ECDHE
// with AES-GCM or ChaCha20-Poly1305 (no CBC, no SHA-1, no RSA key
// exchange). TLS 1.3's suites are all AEAD and not configurable.
var CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// The webhook listener's limits where ServeOptions set none. The API
// server waits at most 30 s for a webhook, so no request needs longer.
const (
	defaultMaxConns    = 256
	defaultBodyTimeout = 10 * time.Second
	defaultSlots       = 16
)

// Serve runs an HTTPS server for handler on address until ctx ends, and
// returns the address it listens on. Every request waits for a slot
// before its body is read (see Slots), the connections are capped, every
// phase of a request has a timeout, and requests refused before a hook
// ran are logged (sampled) and told to o.Rejected.
func Serve(ctx context.Context, address string, handler http.Handler, o ServeOptions) (net.Addr, error) {
	if o.Certificate == nil {
		return nil, errors.New("webhook server: no certificate")
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}
	if o.Slots == nil {
		o.Slots = NewSlots(defaultSlots)
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = defaultBodyTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = defaultMaxConns
	}
	rejected := o.Rejected
	if rejected == nil {
		rejected = func(string) {}
	}
	limits := listen.Limits{MaxConns: o.MaxConns, ReadHeader: 10 * time.Second, Read: 35 * time.Second, Write: 35 * time.Second, Idle: 2 * time.Minute}
	g := &gate{next: handler, slots: o.Slots, bodyTimeout: o.BodyTimeout, rejected: rejected, log: o.Log, sampler: listen.NewSampler(10, time.Second)}
	srv := limits.Server(g, o.Log, func() { rejected("tls_handshake") })
	srv.TLSConfig = serverTLS(o)
	go func() {
		if err := srv.ServeTLS(limits.Limit(ln), "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.WithError(err).Error("webhook server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return ln.Addr(), nil
}

// serverTLS is the TLS configuration of a webhook listener.
func serverTLS(o ServeOptions) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: CipherSuites, GetCertificate: o.Certificate}
	if o.TLS13Only {
		c.MinVersion = tls.VersionTLS13
	}
	if o.ClientCAs != nil {
		c.ClientCAs, c.ClientAuth = o.ClientCAs, tls.RequireAndVerifyClientCert
	}
	return c
}

// ParseTLSMinVersion reads the value of --webhook-tls-min-version: "1.2"
// or "1.3"; it reports whether TLS 1.3 alone is accepted.
func ParseTLSMinVersion(v string) (tls13Only bool, err error) {
	switch strings.TrimPrefix(strings.TrimPrefix(v, "VersionTLS"), "TLS") {
	case "1.2", "12":
		return false, nil
	case "1.3", "13":
		return true, nil
	}
	return false, fmt.Errorf("%q: use 1.2 (TLS 1.2 with AEAD suites, or 1.3) or 1.3 (TLS 1.3 only)", v)
}

// ClientCAs reads the PEM files of the CAs whose client certificates the
// webhook server accepts; nil when files is empty.
func ClientCAs(files []string) (*x509.CertPool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate in it", strings.TrimSpace(f))
		}
	}
	return pool, nil
}
