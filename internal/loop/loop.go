// Package loop holds the waits of the operator's long-running loops: a
// sleep that ends with its context (Sleep), and a wait that another
// goroutine can cut short (Nudge). Leader election, ring membership, the
// hooks folder's watcher, the webhook server's retries at start and the
// bench's and soak's harnesses use them. It imports no package of the
// operator's.
package loop

import (
	"context"
	"time"
)

// Sleep waits d, and reports false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Nudge wakes a loop waiting in Wait at once. Nudges made while nobody
// waits are kept as one, so the next Wait returns at once.
type Nudge chan struct{}

// NewNudge returns a Nudge.
func NewNudge() Nudge { return make(Nudge, 1) }

// Poke wakes the waiter; it never blocks.
func (n Nudge) Poke() {
	select {
	case n <- struct{}{}:
	default:
	}
}

// Wait waits d or until n is poked, and reports false when ctx ended
// first.
func (n Nudge) Wait(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-n:
	case <-timer.C:
	}
	return true
}
