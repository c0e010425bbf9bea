package jq

import (
	"context"
	"time"
)

// armAfter is how many of a run's steps go by before its timeout gets a
// timer: a few microseconds of work, far more than a filter such as .data
// or .metadata.labels takes.
const armAfter = 10000

// runContext is the context of one program run: done once Timeout has
// passed since the run started. gojq asks for Done before each step of the
// program; the timer behind it is made only at the armAfter-th step, so
// the short runs of a watch's filters (one per object and binding, 300,000
// at a start) cost one small allocation instead of a context, a timer and
// a channel each. At start-up that was a sixth of what the process
// allocated, and each allocation is work for the garbage collector
// (docs/design/process.md, "The start-up memory peak").
//
// It is used by one goroutine, the one running the program, as gojq does.
type runContext struct {
	context.Context // Background: no values, no parent to end it
	start           time.Time
	steps           int
	armed           context.Context // nil until armAfter steps
	cancel          context.CancelFunc
}

func newRunContext() *runContext {
	return &runContext{Context: context.Background(), start: time.Now()}
}

func (c *runContext) Deadline() (time.Time, bool) { return c.start.Add(Timeout), true }

// Done is nil, which never becomes ready, until the run has taken armAfter
// steps; then the channel of a context that ends at the run's deadline.
func (c *runContext) Done() <-chan struct{} {
	if c.armed == nil {
		if c.steps++; c.steps < armAfter {
			return nil
		}
		c.armed, c.cancel = context.WithDeadline(context.Background(), c.start.Add(Timeout))
	}
	return c.armed.Done()
}

func (c *runContext) Err() error {
	if c.armed == nil {
		return nil
	}
	return c.armed.Err()
}

// stop releases the timer, if the run got one.
func (c *runContext) stop() {
	if c.cancel != nil {
		c.cancel()
	}
}
