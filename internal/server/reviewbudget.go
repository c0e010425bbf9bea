package server

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// How the reviews the secure metrics listener sends are shared among its
// callers' sources (IP addresses): each source may have sourceReviewRate
// reviews a second sent for it, after a burst of sourceReviewBurst, and
// all sources together reviewRate (a burst of reviewBurst), of which the
// last reviewReserve are kept for sources that have spent at most half
// their own burst (a request refused 429 spends its source's budget too).
// A pod spraying new tokens, or many such pods, thus use up their own
// budgets and the shared part, and a new scraper from another address
// still has its first reviews sent. At most
// reviewSources sources are remembered: one whose budget is full again is
// the same as a new one and is forgotten first.
const (
	sourceReviewRate  = 2
	sourceReviewBurst = 10
	reviewReserve     = 5
	reviewSources     = 4096
)

// reviewBudget says whether a review may be sent for a source now (see
// the constants above).
type reviewBudget struct {
	now func() time.Time

	mu       sync.Mutex
	all      *rate.Limiter
	bySource map[string]*rate.Limiter
}

func newReviewBudget(now func() time.Time) *reviewBudget {
	return &reviewBudget{now: now, all: rate.NewLimiter(reviewRate, reviewBurst), bySource: map[string]*rate.Limiter{}}
}

// allow takes one review from source's budget and from the shared one,
// and reports whether it could.
func (b *reviewBudget) allow(source string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	own := b.sourceLocked(source, now)
	left := own.TokensAt(now)
	if left < 1 {
		return false
	}
	// Charged whether the shared budget lets the review through or not:
	// a source that keeps asking while the shared budget is spent spends
	// its own all the same, and so loses its claim on the reserve.
	own.AllowN(now, 1)
	need := 1.0
	if left < sourceReviewBurst/2 {
		need += reviewReserve
	}
	if b.all.TokensAt(now) < need {
		return false
	}
	b.all.AllowN(now, 1)
	return true
}

// sourceLocked returns source's budget, making room for it among at most
// reviewSources: first by forgetting the sources whose budget is full
// again, then, when every one has spent some, any one (which then starts
// afresh: the shared budget still bounds what the API server is sent).
func (b *reviewBudget) sourceLocked(source string, now time.Time) *rate.Limiter {
	if l, ok := b.bySource[source]; ok {
		return l
	}
	if len(b.bySource) >= reviewSources {
		for s, l := range b.bySource {
			if l.TokensAt(now) >= sourceReviewBurst {
				delete(b.bySource, s)
			}
		}
		for s := range b.bySource {
			if len(b.bySource) < reviewSources {
				break
			}
			delete(b.bySource, s)
		}
	}
	l := rate.NewLimiter(sourceReviewRate, sourceReviewBurst)
	b.bySource[source] = l
	return l
}

// sourceOf is the IP address of a request's client (RemoteAddr without
// its port).
func sourceOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}
