package queue

import "time"

// clock is the queue set's time: the wall clock, or a test's, so that the
// batch window and retries can be tested without waiting for them.
type clock interface {
	Now() time.Time
	// At returns a channel that receives once t has come, and a function
	// that stops it (reporting whether it stopped it before it fired).
	At(t time.Time) (<-chan time.Time, func() bool)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) At(t time.Time) (<-chan time.Time, func() bool) {
	timer := time.NewTimer(time.Until(t))
	return timer.C, timer.Stop
}
