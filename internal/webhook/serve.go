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

	"github.com/hook-operator/hook-operator/internal/listen"
)

// ServeOptions configure one webhook listener.
type ServeOptions struct {
	// Certificate returns the certificate to serve: a CertReloader's or a
	// MemoryCert's GetCertificate.
	Certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAs, when not nil, admit only clients with a certificate one
	// of them signed (the API server's, configured in its admission
	// configuration); GET /healthz alone is answered without one.
	ClientCAs *x509.CertPool
	// TLS13Only refuses TLS 1.2; otherwise TLS 1.2 is offered with AEAD
	// suites only (see CipherSuites).
	TLS13Only bool
	// Slots bound the requests whose handlers run at once (a request
	// takes one once its body has arrived); listeners of one operator
	// share them. nil: 16 of its own, their hooks' memory not bounded.
	Slots *Slots
	// Bodies bounds the memory of request bodies; listeners of one
	// operator share it. nil: 64 MiB of its own.
	Bodies *Bodies
	// Served, when not nil, says whether a path is served: a request to
	// another is answered 404 (reason not_found) before its body is read.
	Served func(path string) bool
	// MaxConns caps the open connections (0: 256), and a quarter of them
	// from one source address.
	MaxConns int
	// BodyTimeout bounds the reading of a request's body, from when its
	// header has arrived (0: 5s).
	BodyTimeout time.Duration
	// Rejected, when not nil, is told the reason of each request answered
	// with an error before any hook ran, and of each failed TLS handshake
	// ("tls_handshake").
	Rejected func(reason string)
	Log      logrus.FieldLogger
}

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
// server waits at most 30 s for a webhook, so no request needs longer, and
// sends a review at once: a body needs a fraction of a second.
const (
	defaultMaxConns    = 256
	defaultBodyTimeout = 5 * time.Second
	defaultSlots       = 16
	defaultBodyBytes   = 64 << 20
)

// The webhook listener's timeouts: a TLS handshake and a request's header
// within 3 s (a client that opens a connection and sends nothing holds it
// no longer), a whole request within 35 s, the API server's longest wait
// and then some.
var webhookLimits = listen.Limits{ReadHeader: 3 * time.Second, Read: 35 * time.Second, Write: 35 * time.Second, Idle: 2 * time.Minute}

// Serve runs an HTTPS server for handler on address until ctx ends, and
// returns the address it listens on. Every request's body is read whole
// within the memory for bodies (see Bodies) before the request waits for
// a slot (see Slots); the connections are capped (see listen.Limits), every
// phase of a request has a timeout, and requests refused before a hook ran
// and connections closed by the listener are logged (sampled) and told to
// o.Rejected.
func Serve(ctx context.Context, address string, handler http.Handler, o ServeOptions) (net.Addr, error) {
	if o.Certificate == nil {
		return nil, errors.New("webhook server: no certificate")
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}
	if o.Slots == nil {
		o.Slots = NewSlots(defaultSlots, 0)
	}
	if o.Bodies == nil {
		o.Bodies = NewBodies(defaultBodyBytes)
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
	g := &gate{next: handler, clientCert: o.ClientCAs != nil, served: o.Served, slots: o.Slots, bodies: o.Bodies, bodyTimeout: o.BodyTimeout, rejected: rejected, log: o.Log, sampler: listen.NewSampler(10, time.Second)}
	limits := webhookLimits
	limits.MaxConns = o.MaxConns
	closed := listen.NewSampler(10, time.Second)
	limits.Refused = func(reason, client string) {
		// Log before counting: whoever sees the count can also read the log line.
		closed.Log(o.Log.WithFields(logrus.Fields{"client": client, "reason": reason}), logrus.WarnLevel, "webhook connection closed")
		rejected(reason)
	}
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
		// A certificate given is verified in the handshake; one not given
		// is refused by the gate for anything but GET /healthz.
		c.ClientCAs, c.ClientAuth = o.ClientCAs, tls.VerifyClientCertIfGiven
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
