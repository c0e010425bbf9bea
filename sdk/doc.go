// Package sdk is the public Go package for writing hook-operator hooks as Go
// programs.
//
// A hook is an executable that hook-operator runs in two ways: with the
// single argument --config, when it must print its configuration (which
// objects it watches and when it runs); and with no arguments, when it must
// read the binding contexts from the file named by $BINDING_CONTEXT_PATH and
// write the object operations it wants applied to $KUBERNETES_PATCH_PATH.
// The contract is described in docs/hooks.md.
//
// This package will hold typed configuration, binding contexts and operation
// builders so that a Go hook needs no hand-written JSON. Until then a Go hook
// implements the contract directly with encoding/json.
package sdk
