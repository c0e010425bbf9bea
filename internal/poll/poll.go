// Package poll holds the tests' one wait for a condition: look until it
// holds, and fail the test, naming what it waited for, once a deadline has
// passed.
package poll

import (
	"testing"
	"time"
)

// Until polls cond until it holds. Once within has passed, it fails t with
// what it waited for. It looks a thousand times over within, so that a short
// wait notices at once and a long one (on a busy API server) asks less often.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilShowing(t, within, what, cond, nil)
}

// UntilShowing is Until, adding show's account of why (a log, the state it
// saw) to the failure; show runs only then.
func UntilShowing(t testing.TB, within time.Duration, what string, cond func() bool, show func() string) {
	t.Helper()
	Every(t, max(within/1000, time.Millisecond), within, what, cond, show)
}

// Every is UntilShowing looking every interval, for a cond that costs its
// target too much to be asked a thousand times (queries to a Prometheus,
// a container's state). show may be nil.
func Every(t testing.TB, interval, within time.Duration, what string, cond func() bool, show func() string) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(interval) {
		if time.Now().After(deadline) {
			if show == nil {
				t.Fatalf("waited %s for %s", within, what)
			}
			t.Fatalf("waited %s for %s:\n%s", within, what, show())
		}
	}
}
