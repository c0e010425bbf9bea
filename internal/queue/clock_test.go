package queue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// fakeClock is a clock that moves only when the test moves it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// armed receives a value each time a timer is set that has not come
	// yet.
	armed chan struct{}
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), armed: make(chan struct{}, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{at: t, c: make(chan time.Time, 1)}
	if !t.After(c.now) {
		ft.c <- c.now
		return ft.c, func() bool { return false }
	}
	c.timers = append(c.timers, ft)
	select {
	case c.armed <- struct{}{}:
	default:
	}
	return ft.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x == ft {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

// set moves the clock to t and fires the timers that have come.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.timers[:0]
	for _, ft := range c.timers {
		if ft.at.After(t) {
			kept = append(kept, ft)
			continue
		}
		ft.c <- t
	}
	c.timers = kept
}

func (c *fakeClock) add(d time.Duration) { c.set(c.Now().Add(d)) }

// earliest returns the time of the first timer set, if any.
func (c *fakeClock) earliest() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, ft := range c.timers {
		if first.IsZero() || ft.at.Before(first) {
			first = ft.at
		}
	}
	return first, !first.IsZero()
}

// fireNext moves the clock to the first timer set, if any.
func (c *fakeClock) fireNext() {
	if at, ok := c.earliest(); ok {
		c.set(at)
	}
}

// nextTimer waits until a timer is set and returns when it fires.
func (c *fakeClock) nextTimer(t *testing.T) time.Time {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if at, ok := c.earliest(); ok {
			return at
		}
		select {
		case <-c.armed:
		case <-deadline:
			t.Fatal("the queue set no timer within 10 s")
		}
	}
}

// clockedSet returns a Set with opts on a fakeClock, whose handler sends
// each run's start time on starts and then runs the recorder, held by its
// gate until the test lets it go.
func clockedSet(opts Options) (s *Set, clk *fakeClock, r *recorder, starts chan time.Time) {
	clk = newFakeClock()
	r = &recorder{fail: map[string]int{}, gate: make(chan struct{})}
	starts = make(chan time.Time, 100)
	handle := func(ctx context.Context, tk *Task) error {
		starts <- clk.Now()
		return r.handle(ctx, tk)
	}
	l, _ := logtest.NewNullLogger()
	s = NewSet(handle, opts, logrus.NewEntry(l))
	s.clock = clk
	return s, clk, r, starts
}
