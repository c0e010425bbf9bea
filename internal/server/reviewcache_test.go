package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func key(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// An answer is remembered for its TTL and forgotten after it; an error is
// not remembered.
func TestReviewCacheRemembersForTheTTL(t *testing.T) {
	c := newReviewCache[string](10)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	var asked int
	ask := func(v string, ttl time.Duration, err error) func() (string, time.Duration, error) {
		return func() (string, time.Duration, error) { asked++; return v, ttl, err }
	}
	ctx := context.Background()
	if v, cached, err := c.lookup(ctx, key("a"), ask("alice", 10*time.Second, nil)); v != "alice" || cached || err != nil {
		t.Fatalf("first lookup: %q %v %v", v, cached, err)
	}
	now = now.Add(9 * time.Second)
	if v, cached, _ := c.lookup(ctx, key("a"), ask("other", time.Second, nil)); v != "alice" || !cached || asked != 1 {
		t.Errorf("within the TTL: %q cached=%v, %d asked; want the remembered answer, asked once", v, cached, asked)
	}
	now = now.Add(time.Second)
	if v, cached, _ := c.lookup(ctx, key("a"), ask("bob", time.Second, nil)); v != "bob" || cached || asked != 2 {
		t.Errorf("at the TTL: %q cached=%v, %d asked; want a new answer", v, cached, asked)
	}
	boom := errors.New("boom")
	for range 2 {
		if _, _, err := c.lookup(ctx, key("e"), ask("x", time.Minute, boom)); !errors.Is(err, boom) {
			t.Errorf("error: %v", err)
		}
	}
	if asked != 4 {
		t.Errorf("an error was remembered: asked %d times, want 4", asked)
	}
	if _, _, _ = c.lookup(ctx, key("z"), ask("x", 0, nil)); c.len() != 1 {
		t.Errorf("an answer with TTL 0 was remembered: %d held", c.len())
	}
}

// The cache holds at most its size, forgetting the least recently used.
func TestReviewCacheIsBounded(t *testing.T) {
	c := newReviewCache[int](100)
	for i := range 1000 {
		c.put(key(strconv.Itoa(i)), i, time.Hour)
		if i == 950 {
			c.get(key("851")) // the oldest, used: kept over 852 on
		}
	}
	if c.len() != 100 {
		t.Errorf("%d answers held, want 100", c.len())
	}
	if _, ok := c.get(key("851")); !ok {
		t.Error("a recently used answer was forgotten")
	}
	if _, ok := c.get(key("852")); ok {
		t.Error("the least recently used answer was kept")
	}
	if v, ok := c.get(key("999")); !ok || v != 999 {
		t.Errorf("the newest answer: %d %v", v, ok)
	}
}

// Callers asking at once for the same key share one review.
func TestReviewCacheSharesAReviewUnderWay(t *testing.T) {
	c := newReviewCache[string](10)
	release := make(chan struct{})
	var asked atomic.Int32
	var wg sync.WaitGroup
	var shared atomic.Int32
	for range 50 {
		wg.Go(func() {
			v, cached, err := c.lookup(context.Background(), key("t"), func() (string, time.Duration, error) {
				asked.Add(1)
				<-release
				return "v", 0, nil // not remembered: only sharing saves reviews
			})
			if v != "v" || err != nil {
				t.Errorf("lookup: %q %v", v, err)
			}
			if cached {
				shared.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let them queue; more sharing is fine either way
	close(release)
	wg.Wait()
	if n := asked.Load(); n+shared.Load() != 50 || n == 50 {
		t.Errorf("50 callers at once: %d reviews, %d shared; want them to share", n, shared.Load())
	}
	// A caller that gives up waiting gets its context's error.
	block := make(chan struct{})
	defer close(block)
	go func() {
		_, _, _ = c.lookup(context.Background(), key("slow"), func() (string, time.Duration, error) { <-block; return "", 0, nil })
	}()
	for {
		c.mu.Lock()
		_, pending := c.pending[key("slow")]
		c.mu.Unlock()
		if pending {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.lookup(ctx, key("slow"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiter whose context ended: %v", err)
	}
}
