package poll_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/poll"
)

// Until returns once cond holds, after as many looks as that took.
func TestUntilReturnsWhenCondHolds(t *testing.T) {
	looks := 0
	poll.Until(t, 10*time.Second, "the third look", func() bool {
		looks++
		return looks == 3
	})
	if looks != 3 {
		t.Fatalf("cond was called %d times, want 3", looks)
	}
}

// fatal records what Fatalf was given and stops the goroutine, as
// testing.T's Fatalf does.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failing runs wait against a recorder and returns what it failed with.
func failing(t *testing.T, wait func(tb testing.TB)) string {
	t.Helper()
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	return f.msg
}

// A cond that never holds fails the test after the deadline, naming what was
// awaited, and with UntilShowing, show's account.
func TestUntilFailsAfterTheDeadline(t *testing.T) {
	start := time.Now()
	msg := failing(t, func(tb testing.TB) {
		poll.Until(tb, 50*time.Millisecond, "a cond that never holds", func() bool { return false })
	})
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("failed after %s, before the deadline of 50ms", took)
	}
	if want := "waited 50ms for a cond that never holds"; msg != want {
		t.Errorf("failed with %q, want %q", msg, want)
	}
	msg = failing(t, func(tb testing.TB) {
		poll.UntilShowing(tb, 20*time.Millisecond, "x", func() bool { return false }, func() string { return "the state seen" })
	})
	if want := "waited 20ms for x:\nthe state seen"; msg != want {
		t.Errorf("failed with %q, want %q", msg, want)
	}
}
