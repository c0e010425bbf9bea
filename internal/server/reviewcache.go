package server

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"
)

// reviewCache remembers the answers of reviews (TokenReview,
// SubjectAccessReview) for a while, by the SHA-256 of what was reviewed,
// so that a caller sending the same token many times, good or bad, costs
// the API server one review per TTL. It holds at most max answers and
// forgets the least recently used first. Callers asking at once for the
// same key share one review: the first asks, the others wait for its
// answer.
type reviewCache[V any] struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *cached[V]
	lru     *list.List                 // front: most recently used
	pending map[[32]byte]*reviewCall[V]
}

// errUnfinished is the answer of a review that ended without one.
var errUnfinished = errors.New("the review did not finish")

type cached[V any] struct {
	key     [32]byte
	value   V
	expires time.Time
}

// reviewCall is a review under way; done is closed once value and err
// are set.
type reviewCall[V any] struct {
	done  chan struct{}
	value V
	err   error
}

func newReviewCache[V any](max int) *reviewCache[V] {
	return &reviewCache[V]{max: max, now: time.Now, entries: map[[32]byte]*list.Element{}, lru: list.New(), pending: map[[32]byte]*reviewCall[V]{}}
}

// get returns the answer remembered for key, if it has not expired.
func (c *reviewCache[V]) get(key [32]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(key)
}

func (c *reviewCache[V]) getLocked(key [32]byte) (V, bool) {
	var zero V
	el, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cached[V])
	if !c.now().Before(e.expires) {
		c.lru.Remove(el)
		delete(c.entries, key)
		return zero, false
	}
	c.lru.MoveToFront(el)
	return e.value, true
}

// put remembers value for key during ttl (nothing when ttl <= 0).
func (c *reviewCache[V]) put(key [32]byte, value V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(ttl)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cached[V])
		e.value, e.expires = value, expires
		c.lru.MoveToFront(el)
		return
	}
	for c.lru.Len() >= c.max {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*cached[V]).key)
	}
	c.entries[key] = c.lru.PushFront(&cached[V]{key: key, value: value, expires: expires})
}

// len returns the count of answers held, expired ones not yet dropped
// included.
func (c *reviewCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// lookup returns the answer for key: the remembered one (cached true), or
// that of ask, which is called once for all the callers that ask for key
// while it runs (and they get cached true: they cost the API server
// nothing). ask returns how long its answer may be remembered (0: not at
// all, as for an error). A caller whose ctx ends first gets ctx's error.
func (c *reviewCache[V]) lookup(ctx context.Context, key [32]byte, ask func() (V, time.Duration, error)) (value V, cached bool, err error) {
	c.mu.Lock()
	if v, ok := c.getLocked(key); ok {
		c.mu.Unlock()
		return v, true, nil
	}
	if call, ok := c.pending[key]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.value, true, call.err
		case <-ctx.Done():
			var zero V
			return zero, true, ctx.Err()
		}
	}
	call := &reviewCall[V]{done: make(chan struct{})}
	c.pending[key] = call
	c.mu.Unlock()

	// Deferred, so that the waiters are let go (with errUnfinished) even
	// if ask panics.
	err = errUnfinished
	defer func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		call.value, call.err = value, err
		close(call.done)
	}()
	value, ttl, err := ask()
	if err == nil {
		c.put(key, value, ttl)
	}
	return value, false, err
}
