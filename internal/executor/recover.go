package executor

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// panicked is what of a recovered panic may leave the operator's log: the
// panic's value and stack stay in it.
const panicked = "the operator failed while handling it (a recovered panic: a bug, whose stack is in its log)"

// panicError is a panic recovered in one unit of work.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("recovered panic: %v", e.value) }

// contain runs f, one unit of work on input the operator does not control
// (what a hook wrote, a request's review): a queued run (where "run") or the
// run of an admission or conversion request. A panic in f fails that unit
// alone: it is logged with its stack, counted (Metrics.PanicRecovered), and
// returned as an error whose public words say only that the operator failed.
// Callers handle it as any failure: a queued run is retried with backoff, a
// request is answered with an error. Start-up and wiring are not contained;
// docs/design/process.md, "Panics", says why.
func (e *Executor) contain(h *hook.Hook, where string, f func() error) (err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		e.Log.WithFields(logrus.Fields{"hook": h.Name, "where": where, "panic": fmt.Sprint(v), "stack": string(debug.Stack())}).
			Error("recovered a panic: this unit of work failed, the operator goes on")
		e.Metrics.PanicRecovered(where)
		err = fail(panicked, fmt.Errorf("hook %s: %w", h.Name, &panicError{value: v}))
	}()
	return f()
}

// isPanic reports whether err is a panic that contain recovered.
func isPanic(err error) bool {
	var p *panicError
	return errors.As(err, &p)
}
