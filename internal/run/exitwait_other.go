//go:build !linux

package run

// awaitExit does nothing where there are no pidfds: os/exec's Wait waits.
func awaitExit(int) {}
