package server

import (
	"context"
	"sync"
	"time"
)

// readyCheckTimeout bounds one check of readiness (the API server's
// /readyz is asked with 2 s, and broken watches with 2 s each).
const readyCheckTimeout = 10 * time.Second

// readiness is the operator's readiness as last checked. /readyz asks for
// it; a request that finds the last check older than the interval starts a
// new one, which every request meanwhile waits for, so that callers,
// however many, cost at most one check per interval (each check asks the
// API server), and an operator nobody asks costs nothing.
type readiness struct {
	ctx      context.Context
	op       Operator
	interval time.Duration

	mu      sync.Mutex
	checked time.Time // when the state below was found; zero: never
	ok      bool
	why     []string
	// running is closed when the check in progress is done; nil when
	// none is.
	running chan struct{}
}

// newReadiness checks op's readiness when asked, at most once every
// interval (0: DefaultReadyInterval), until ctx ends.
func newReadiness(ctx context.Context, op Operator, interval time.Duration) *readiness {
	if interval <= 0 {
		interval = DefaultReadyInterval
	}
	return &readiness{ctx: ctx, op: op, interval: interval}
}

// get returns the operator's readiness, and what is missing. When the last
// check is older than the interval, it waits for a new one, until ctx
// ends; then it answers with the last state (not ready, if none).
func (r *readiness) get(ctx context.Context) (bool, []string) {
	r.mu.Lock()
	if time.Since(r.checked) >= r.interval {
		if r.running == nil {
			r.running = make(chan struct{})
			go r.check(r.running)
		}
		done := r.running
		r.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	if r.checked.IsZero() {
		return false, []string{"readiness not checked yet"}
	}
	return r.ok, r.why
}

// check asks the operator, records what it found and closes done.
func (r *readiness) check(done chan struct{}) {
	ctx, cancel := context.WithTimeout(r.ctx, readyCheckTimeout)
	ok, why := r.op.Ready(ctx)
	cancel()
	r.mu.Lock()
	r.checked, r.ok, r.why, r.running = time.Now(), ok, why, nil
	r.mu.Unlock()
	close(done)
}
