//go:build !linux

package run

// awaitExit returns false at once where there are no pidfds: os/exec's
// Wait waits.
func awaitExit(int) bool { return false }
