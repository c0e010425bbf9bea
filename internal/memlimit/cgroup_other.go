//go:build !linux

package memlimit

import "errors"

// containerLimit finds no limit: cgroups are Linux's.
func containerLimit(string) (int64, error) {
	return 0, errors.New("cgroups exist on Linux only")
}
