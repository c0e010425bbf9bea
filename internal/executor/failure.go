package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// failure is the error of a failed run together with what of it may leave
// the operator's log. The error itself (in the log, the debug routes and
// dry-run's reports) may end with the hook's stderr or quote what the hook
// wrote, which can hold the data of the objects it read, Secrets included;
// what may not: it goes into Events, which more people can read than can
// read Secrets.
type failure struct {
	// what says what failed in words of the operator's own: an exit
	// status, a timeout, the file that was invalid, the operation that
	// the API server refused and the reason it gave.
	what string
	err  error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// fail wraps err, saying what failed (see failure.what).
func fail(what string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{what: what, err: err}
}

// PublicReason is what of err, the error of a failed run, may be shown
// outside the operator's log (an Event, a webhook's answer): what failed,
// in the operator's own words (see failure), never what the hook wrote;
// "the run failed" for an error that carries no such words.
func PublicReason(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.what
	}
	return "the run failed"
}

// runStatus says how a hook process failed, from the error of
// run.Runner.Run: its first line names the exit status and is all the
// runner's own words; the stderr tail follows it.
func runStatus(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the hook timed out"
	case errors.Is(err, context.Canceled):
		return "the run was cancelled (the operator is stopping)"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	s, _, _ = strings.Cut(s, "; stderr ends with")
	if _, rest, ok := strings.Cut(s, ": "); ok && strings.HasPrefix(s, "hook ") {
		s = rest
	}
	return "the hook failed: " + s
}

// applyStatus says which operation the API server refused and why (its
// reason, such as Forbidden or Invalid: the message may quote the
// object's values).
func applyStatus(err error) string {
	what := "applying its operations failed"
	var opErr *ops.Error
	if errors.As(err, &opErr) {
		what = fmt.Sprintf("operation %d", opErr.Index)
		if opErr.Op != "" {
			what += " (" + opErr.Op + ")"
		}
		what += " failed"
	}
	if reason := apierrors.ReasonForError(err); reason != "" && reason != "Unknown" {
		what += ": " + string(reason)
	}
	return what
}

// What a run that wrote invalid files failed of.
const (
	invalidOperations = "the hook wrote invalid operations to $KUBERNETES_PATCH_PATH; none were applied"
	invalidMetrics    = "the hook wrote invalid metrics to $METRICS_PATH; no operation was applied"
)

// invalidOps says which operation of the file was the first invalid one,
// of what type and at which field, from the error of ops.Parse; never the
// reason, nor the operation's object, which may quote what the hook wrote.
func invalidOps(err error) string {
	var opErr *ops.Error
	if !errors.As(err, &opErr) {
		return invalidOperations
	}
	first := fmt.Sprintf("operation %d", opErr.Index)
	if typ, _, _ := strings.Cut(opErr.Op, " "); typ != "" {
		first += ", a " + limit.Quote(typ)
	}
	if opErr.Field != "" {
		first += ", at " + opErr.Field
	}
	return invalidOperations + " (the first invalid one: " + first + ")"
}

// reasonOf is the API server's reason for err (Forbidden, Conflict …), or
// "see the operator's log" when err is not the API server's.
func reasonOf(err error) string {
	if reason := apierrors.ReasonForError(err); reason != "" && reason != "Unknown" {
		return string(reason)
	}
	return "see the operator's log"
}
