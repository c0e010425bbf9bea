package kube

import (
	"fmt"
	"strings"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

// MissingKindError is Resolve's error for a kind that its group/version
// does not serve while discovery lists that group/version with other
// kinds: most often a typo ("Greting" in a group that serves "Greeting"),
// since a CRD not installed yet usually leaves its group/version unserved
// altogether. It wraps ErrUnknownKind, so a binding with it waits for
// its kind like any other; what tells it apart is that it is worth an
// error and a did-you-mean.
type MissingKindError struct {
	// Kind is the kind as the binding names it (lower case).
	Kind string
	// GroupVersion is the group/version asked for, which is served.
	GroupVersion string
	// Served are the kinds GroupVersion serves, sorted.
	Served []string
}

// maxServedListed bounds how many of a group/version's kinds the error
// lists.
const maxServedListed = 10

func (e *MissingKindError) Error() string {
	served := e.Served
	more := ""
	if len(served) > maxServedListed {
		served, more = served[:maxServedListed], fmt.Sprintf(" and %d more", len(e.Served)-maxServedListed)
	}
	msg := fmt.Sprintf("%v (%s is served with the kinds %s%s, not this one", ErrUnknownKind, e.GroupVersion, strings.Join(served, ", "), more)
	if near := e.DidYouMean(); near != "" {
		return msg + fmt.Sprintf("; did you mean %q?)", near)
	}
	return msg + "; if it is a custom resource not installed yet, install its CRD)"
}

// Unwrap makes the error an ErrUnknownKind.
func (e *MissingKindError) Unwrap() error { return ErrUnknownKind }

// DidYouMean returns the served kind nearest to Kind (spelling.Nearest),
// or "" when none is near.
func (e *MissingKindError) DidYouMean() string { return spelling.Nearest(e.Kind, e.Served) }
