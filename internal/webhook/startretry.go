package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// DefaultStartRetry is how long the operator keeps trying to serve and
// register the bindings found at start when the errors may pass by
// themselves (see transient): the API server restarting, overloaded, or
// briefly out of reach while the operator's Pod starts. Past it, start
// fails.
const DefaultStartRetry = 60 * time.Second

// The waits between attempts at start: the first, doubled after each
// failure up to the last. A wait the API server asks for (Retry-After) is
// waited instead when it is longer.
const (
	startRetryFirst = time.Second
	startRetryMax   = 10 * time.Second
)

// transient reports whether err, from serving or registering the
// bindings, may pass without a change on the operator's side: the API
// server out of reach (connection refused, reset or cut short, a
// timeout), failing or overloaded (5xx, 429), or a write that raced
// another (409). asked is the wait the API server asked for with
// Retry-After, or 0.
//
// Everything else is not transient: a certificate or CA the API server or
// the operator does not accept, 401 and 403 (credentials or RBAC), 422 (a
// configuration the API server refuses), 404, a missing file, an address
// the listener cannot take, and the operator's own checks. Another try
// would only fail the same way.
func transient(err error) (retry bool, asked time.Duration) {
	if err == nil || certificateError(err) {
		return false, 0
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		if code != 429 && code != 409 && code < 500 {
			return false, 0
		}
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			asked = time.Duration(s) * time.Second
		}
		return true, asked
	}
	var op *net.OpError
	if errors.As(err, &op) {
		// "listen" is the webhook listener's own address; "remote error"
		// a TLS alert from the API server (it refused the client
		// certificate).
		return op.Op == "dial" || op.Op == "read" || op.Op == "write", 0
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return true, 0
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsHTTP2ConnectionLost(err),
		utilnet.IsProbableEOF(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true, 0
	}
	return false, 0
}

// certificateError reports whether err is a certificate that was not
// accepted, on either side of a TLS connection.
func certificateError(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
	)
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		errors.As(err, &verify) || errors.As(err, &alert)
}

// nextWait is the wait before the next attempt at start: the backoff, or
// the wait the API server asked for when longer, cut to what is left of
// the time allowed.
func nextWait(backoff, asked, left time.Duration) time.Duration {
	return min(max(backoff, asked), left)
}

// syncAtStart runs attempt (sync) for the bindings found at start until it
// succeeds, tries again after transient errors for up to
// Options.StartRetry, logging each failed attempt once, and returns the
// first error that is not transient at once. It returns nil when ctx ends.
func (s *Server) syncAtStart(ctx context.Context, attempt func(context.Context) error) error {
	budget := s.o.StartRetry
	if budget == 0 {
		budget = DefaultStartRetry
	}
	begin := s.now()
	backoff := s.startBackoff[0]
	for n := 1; ; n++ {
		err := attempt(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if n > 1 {
				s.log.WithFields(logrus.Fields{"configuration": s.o.ConfigurationName, "attempts": n}).Info("the webhooks found at start are served and registered")
			}
			return nil
		}
		retry, asked := transient(err)
		if !retry || budget < 0 {
			return err
		}
		left := budget - s.now().Sub(begin)
		if left <= 0 {
			return fmt.Errorf("serving and registering the webhooks (configuration %s) failed %d times in %s; the last error: %w",
				s.o.ConfigurationName, n, s.now().Sub(begin).Round(time.Second), err)
		}
		wait := nextWait(backoff, asked, left)
		s.log.WithError(err).WithFields(logrus.Fields{"configuration": s.o.ConfigurationName, "attempt": n, "retryIn": wait.String()}).
			Warn("serving and registering the webhooks found at start failed; trying again")
		if s.sleep(ctx, wait) != nil {
			return nil
		}
		backoff = min(2*backoff, s.startBackoff[1])
	}
}

// sleep waits for d, or until ctx ends (its error then): loop.Sleep in
// the shape of the Server's clock, which tests replace.
func sleep(ctx context.Context, d time.Duration) error {
	if !loop.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
