package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// MemoryCert serves a certificate and key held in memory only: the
// self-signed ones, whose private key is never written to a file, so that
// no crash can leave it behind on disk.
type MemoryCert struct {
	cur atomic.Pointer[memoryPair]
}

type memoryPair struct {
	cert *tls.Certificate
	ca   []byte
}

// Set replaces the pair served (and the CA that signed it); an error leaves
// the one before in place.
func (m *MemoryCert) Set(c *Certificates) error {
	pair, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		return fmt.Errorf("the webhook certificate and key: %w", err)
	}
	m.cur.Store(&memoryPair{cert: &pair, ca: c.CA})
	return nil
}

// GetCertificate is tls.Config's hook: the pair last Set.
func (m *MemoryCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p := m.cur.Load()
	if p == nil {
		return nil, errors.New("no webhook certificate yet")
	}
	return p.cert, nil
}

// CA returns the PEM of the CA that signed the pair last Set, for the
// webhook configurations' caBundle.
func (m *MemoryCert) CA() []byte {
	if p := m.cur.Load(); p != nil {
		return p.ca
	}
	return nil
}

// Keep returns the certificates of s in memory, and looks at the Secret
// again every `every` until ctx ends, serving a renewed certificate (made
// by this replica or another) as soon as it is seen. A failed renewal is
// logged and the current certificate served on.
func (s *SelfSigned) Keep(ctx context.Context, every time.Duration) (*MemoryCert, error) {
	c, err := s.Ensure(ctx)
	if err != nil {
		return nil, err
	}
	m := &MemoryCert{}
	if err := m.Set(c); err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			c, err := s.Ensure(ctx)
			if err == nil {
				err = m.Set(c)
			}
			if err != nil && ctx.Err() == nil {
				s.Log.WithError(err).Warn("--webhook-self-signed: renewing the certificate failed; the current one is served")
			}
		}
	}()
	return m, nil
}
