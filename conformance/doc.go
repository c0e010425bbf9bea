// Package conformance holds the differential conformance suite: every
// case of a corpus (cases/: hooks of our own for each part of the hook
// contract, and shell-operator's examples read from the pinned module) runs
// under shell-operator, the reference, and under hook-operator, against the
// same cluster and driven by the same steps; the binding contexts, objects
// and hooks' metrics must agree, but for the differences listed with their
// rows in docs/hooks.md. The reference is built from the version
// hack/tools/shell-operator/go.mod pins (see hack/tools/shell-operator.sh).
// docs/development.md describes how a case is written and compared.
package conformance
