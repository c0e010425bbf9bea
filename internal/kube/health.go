package kube

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// Health follows whether the API server answers, for the parts of the
// runtime that must not back off because of an outage: when a request
// fails in a way that says the server may be away, and its /readyz does
// not answer either, an outage begins. Then /readyz is asked every
// ProbeInterval, and the outage ends the moment it answers 200. Watches
// wait for that and resume at once, and runs that failed during the outage
// are retried at once, instead of each waiting out a backoff that grew
// while the server was away.
//
// A nil *Health knows of no outage: Wait returns at once and Failed says
// false.
type Health struct {
	probe    func(ctx context.Context) error
	interval time.Duration
	log      logrus.FieldLogger

	mu      sync.Mutex
	down    bool
	since   time.Time
	outages uint64
	back    chan struct{} // closed when the outage ends
}

// ProbeInterval is how often /readyz is asked during an outage.
const ProbeInterval = 200 * time.Millisecond

// NewHealth returns the health of the API server that c (Clients.
// Unversioned) reaches.
func NewHealth(c *rest.RESTClient, log logrus.FieldLogger) *Health {
	return newHealth(Readyz(c), ProbeInterval, log)
}

// Readyz returns a check of the API server's /readyz through c
// (Clients.Unversioned), with a 2-second timeout: nil when it answers 200.
func Readyz(c *rest.RESTClient) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return c.Get().AbsPath("/readyz").Do(ctx).Error()
	}
}

func newHealth(probe func(context.Context) error, interval time.Duration, log logrus.FieldLogger) *Health {
	closed := make(chan struct{})
	close(closed)
	return &Health{probe: probe, interval: interval, log: log, back: closed}
}

// Unreachable reports whether err may mean that the API server is away
// (or not ready: etcd away behind it): a connection refused, reset or cut
// short, a timeout, a 503, 504 or 500. Only a failed /readyz makes it an
// outage (see Failed).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &opErr), errors.As(err, &netErr) && netErr.Timeout():
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsInternalError(err):
		return true
	}
	return false
}

// Failed is told about a failed request. It reports whether the API server
// is away: err says it may be (see Unreachable), and /readyz does not
// answer 200 either, or an outage is already going on. An outage that
// begins here is logged, and ends when /readyz answers again.
func (h *Health) Failed(ctx context.Context, err error) bool {
	if h == nil || !Unreachable(err) || ctx.Err() != nil {
		return false
	}
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	if down {
		return true
	}
	perr := h.probe(ctx)
	if perr == nil || ctx.Err() != nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		h.down, h.since = true, time.Now()
		h.outages++
		h.back = make(chan struct{})
		h.log.WithError(err).WithField("readyz", perr.Error()).Warn("the API server does not answer; watches and retries wait for it")
		go h.poll(h.back)
	}
	return true
}

// poll asks /readyz until it answers, and ends the outage.
func (h *Health) poll(back chan struct{}) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for range t.C {
		if h.probe(context.Background()) != nil {
			continue
		}
		h.mu.Lock()
		h.down = false
		away := time.Since(h.since)
		close(back)
		h.mu.Unlock()
		h.log.WithField("away", away.Round(time.Millisecond).String()).Info("the API server answers again")
		return
	}
}

// Wait returns when no outage is going on, or with ctx's error.
func (h *Health) Wait(ctx context.Context) error {
	if h == nil {
		return nil
	}
	select {
	case <-h.Back():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Back returns a channel that is closed when no outage is going on: at
// once, or when the current one ends.
func (h *Health) Back() <-chan struct{} {
	if h == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.back
}

// State returns how many outages have begun so far, and whether one is
// going on: a run that failed while the count changed, or during an
// outage, failed because of it.
func (h *Health) State() (outages uint64, down bool) {
	if h == nil {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.outages, h.down
}
