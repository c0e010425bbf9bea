package hook

import (
	"fmt"
	"strings"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// ConfigError is one problem with one hook's configuration.
type ConfigError struct {
	// Hook is the hook's name (its path relative to the hooks folder).
	Hook string
	// Field is the path of the offending field, such as
	// "kubernetes[1].labelSelector.matchExpressions[0].operator", or empty
	// when the problem is with the hook or its --config output as a whole.
	Field string
	// Reason says what is wrong and what to change.
	Reason string
}

// Error renders "hook <name>: <field>: <reason>" on one line, with
// limit.Printable: the name is a file name and the reason may quote what
// the hook printed.
func (e *ConfigError) Error() string {
	if e.Field == "" {
		return limit.Printable(fmt.Sprintf("hook %s: %s", e.Hook, e.Reason))
	}
	return limit.Printable(fmt.Sprintf("hook %s: %s: %s", e.Hook, e.Field, e.Reason))
}

// ConfigErrors is every problem found in the configuration of a set of
// hooks. Load and ParseConfig return it so that a user fixes all of them in
// one go instead of one per restart.
type ConfigErrors []*ConfigError

// Error lists the problems one per line: the first limit.MaxListed, each
// cut to limit.MaxProblemBytes, and then how many more there are, so that
// a configuration with thousands of mistakes still makes a log line.
func (errs ConfigErrors) Error() string {
	if len(errs) == 1 {
		return limit.Cut(errs[0].Error())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems with hook configuration:", len(errs))
	for _, e := range errs[:min(len(errs), limit.MaxListed)] {
		b.WriteString("\n  ")
		b.WriteString(limit.Cut(e.Error()))
	}
	if more := len(errs) - limit.MaxListed; more > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more; fix these and load again to see the rest", more)
	}
	return b.String()
}

// Unwrap returns the problems as errors, for errors.As.
func (errs ConfigErrors) Unwrap() []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}
