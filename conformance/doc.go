// Package conformance holds the tests that run hooks under shell-operator,
// the reference, as well as under hook-operator. The reference is built
// from the version hack/tools/shell-operator/go.mod pins (see
// hack/tools/shell-operator.sh).
package conformance
