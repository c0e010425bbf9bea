package run

import (
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// Deadline is the timeout of one run that may change while the run goes
// on: a reload that changes the hook's settings.timeout moves the
// deadline of its running run (see Request.Deadline). The zero value is
// ready to use; a Deadline serves one run.
type Deadline struct {
	mu      sync.Mutex
	timeout time.Duration
	start   time.Time
	timer   *time.Timer
}

// Reset makes the run end timeout after it started, at once when that time
// has passed; as on a timeout, the hook is stopped and the run fails with
// context.DeadlineExceeded. Called before the run starts, it sets the
// timeout the run starts with.
func (d *Deadline) Reset(timeout time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timeout = timeout
	if d.timer != nil {
		d.timer.Reset(max(time.Until(d.start.Add(timeout)), 0))
	}
}

// Timeout returns the run's timeout as it is now.
func (d *Deadline) Timeout() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.timeout
}

// arm starts the run's clock: expire is called once the timeout (the one
// Reset set, else timeout) has passed.
func (d *Deadline) arm(timeout time.Duration, expire func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timeout <= 0 {
		d.timeout = timeout
	}
	d.start = time.Now()
	d.timer = time.AfterFunc(d.timeout, expire)
}

// stop ends the run's clock.
func (d *Deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

// Timeout returns the timeout a run of h gets: its settings.timeout, else
// the Runner's DefaultTimeout.
func (r *Runner) Timeout(h *hook.Hook) time.Duration {
	return r.timeout(Request{Hook: h})
}
