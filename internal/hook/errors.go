package hook

import (
	"fmt"
	"strings"
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

// Error renders "hook <name>: <field>: <reason>".
func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("hook %s: %s", e.Hook, e.Reason)
	}
	return fmt.Sprintf("hook %s: %s: %s", e.Hook, e.Field, e.Reason)
}

// ConfigErrors is every problem found in the configuration of a set of
// hooks. Load and ParseConfig return it so that a user fixes all of them in
// one go instead of one per restart.
type ConfigErrors []*ConfigError

// Error lists the problems one per line.
func (errs ConfigErrors) Error() string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems with hook configuration:", len(errs))
	for _, e := range errs {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
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
