package server

import (
	"context"
	"sync"
	"time"
)

// readyCheckTimeout bounds one check of readiness (the API server's
// /readyz is asked with 2 s, and broken watches with 2 s each).
const readyCheckTimeout = 10 * time.Second

// readiness is the operator's readiness as last checked: a loop asks
// Operator.Ready every interval, and /readyz answers from what it found,
// so that no request to /readyz reaches the API server.
type readiness struct {
	// first is closed once the first check is done: a request that comes
	// before it waits for it (once, for all such requests) instead of
	// being told a state nobody has checked.
	first   chan struct{}
	mu      sync.Mutex
	checked bool
	ok      bool
	why     []string
}

// newReadiness checks op's readiness now and then every interval (0:
// DefaultReadyInterval) until ctx ends.
func newReadiness(ctx context.Context, op Operator, interval time.Duration) *readiness {
	if interval <= 0 {
		interval = DefaultReadyInterval
	}
	r := &readiness{first: make(chan struct{})}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			cctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
			ok, why := op.Ready(cctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			if !r.checked {
				close(r.first)
			}
			r.checked, r.ok, r.why = true, ok, why
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// get returns the last state found, and what is missing. Before the first
// check is done it waits for it, until ctx ends (then: not ready).
func (r *readiness) get(ctx context.Context) (bool, []string) {
	select {
	case <-r.first:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checked {
		return false, []string{"readiness not checked yet"}
	}
	return r.ok, r.why
}
