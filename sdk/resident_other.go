//go:build !unix

package sdk

// closeOnExec does nothing where hook-operator does not start resident
// hooks (it runs hooks on Linux, and macOS for tests and replay).
func closeOnExec(int) {}
