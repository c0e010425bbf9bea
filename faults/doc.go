// Package faults is the fault suite: the hook-operator binary runs a
// level-triggered mirror hook against the local cluster while faults are
// injected (the operator killed, the control plane stopped, a hook that
// hangs, a bad operation, API throttling), and each test checks that
// nothing is lost and measures how soon the operator is back in step.
//
// The suite is part of `make test`. Its figures are printed with -v and
// collected by `make bench`-style runs of `go test -run Fault -v ./faults`.
package faults
