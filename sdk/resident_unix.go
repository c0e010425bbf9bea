//go:build unix

package sdk

import "syscall"

// closeOnExec keeps fd from the programs a handler starts.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }
