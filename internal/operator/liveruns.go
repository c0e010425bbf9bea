package operator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/run"
)

// errHookRemoved is why a run is cancelled when a reload removes its hook.
var errHookRemoved = errors.New("the hook was removed by a reload")

// liveRuns are the queued runs in progress, by hook name, so that a reload
// reaches them: a changed timeout moves their deadline, and a removed hook
// cancels them. A run registers before its task is matched with the
// current hook set (retarget), so a reload either finds it here or has
// already replaced the hook the run is given.
type liveRuns struct {
	mu   sync.Mutex
	runs map[string]map[*liveRun]struct{}
}

// liveRun is one run in progress.
type liveRun struct {
	deadline run.Deadline
	cancel   context.CancelCauseFunc
}

// begin registers a run of the hook named hook, and returns its context
// (cancelled with errHookRemoved when a reload removes the hook; carrying
// its deadline, see executor.RunDeadline) and the function that ends the
// registration.
func (l *liveRuns) begin(ctx context.Context, hook string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &liveRun{cancel: cancel}
	l.mu.Lock()
	if l.runs == nil {
		l.runs = map[string]map[*liveRun]struct{}{}
	}
	if l.runs[hook] == nil {
		l.runs[hook] = map[*liveRun]struct{}{}
	}
	l.runs[hook][r] = struct{}{}
	l.mu.Unlock()
	return executor.WithRunDeadline(ctx, &r.deadline), func() {
		l.mu.Lock()
		delete(l.runs[hook], r)
		if len(l.runs[hook]) == 0 {
			delete(l.runs, hook)
		}
		l.mu.Unlock()
		cancel(nil)
	}
}

// retime moves the deadline of every running run of hook to timeout after
// its start (a reload changed the hook's settings.timeout); it returns how
// many runs' deadlines it moved.
func (l *liveRuns) retime(hook string, timeout time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for r := range l.runs[hook] {
		if r.deadline.Timeout() != timeout {
			r.deadline.Reset(timeout)
			n++
		}
	}
	return n
}

// cancel stops every running run of hook, as a timeout does (SIGTERM to
// the hook's process group, SIGKILL after the kill grace), and returns how
// many it reached.
func (l *liveRuns) cancel(hook string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := range l.runs[hook] {
		r.cancel(errHookRemoved)
	}
	return len(l.runs[hook])
}

// RetryNow runs now, rather than after their backoff, the failed runs of
// the queue named queue that wait for their retry (`hook-operator debug
// retry`). It returns how many it made due.
func (o *Operator) RetryNow(queue string) (int, error) {
	n, err := o.queues.RetryNow(queue)
	if err == nil {
		o.log.WithFields(map[string]any{"queue": queue, "tasks": n}).Warn("debug: failed runs retried now, their backoff skipped")
	}
	return n, err
}

// DropPending drops the pending runs of the hook named hook in the queue
// named queue, only those of the object key when key is not empty, a
// failed run waiting for its retry included (`hook-operator debug drop`).
// Their binding contexts are lost: see docs/operating.md for when that is
// safe. It returns how many tasks it dropped.
func (o *Operator) DropPending(queue, hook, key string) (int, error) {
	n, err := o.queues.Drop(queue, hook, key)
	if err == nil {
		o.log.WithFields(map[string]any{"queue": queue, "hook": hook, "key": key, "tasks": n}).Warn("debug: pending runs dropped; their binding contexts are lost")
	}
	return n, err
}
