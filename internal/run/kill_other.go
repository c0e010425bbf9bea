//go:build !linux

package run

import (
	"context"
	"os/exec"
	"syscall"

	"github.com/sirupsen/logrus"
)

// Subreap does nothing where there is no child subreaper: a run's end
// kills the hook's process group only (killLeftovers), and what left it
// (setsid) lives on.
func Subreap(context.Context, logrus.FieldLogger) error { return nil }

// startHook starts cmd, a hook.
func startHook(cmd *exec.Cmd) error { return cmd.Start() }

// untrackHook does nothing: no hooks are tracked here.
func untrackHook(int) {}

// killLeftovers kills the process group of the run whose hook is pid, and
// reports false: what left the group cannot be found, so the run's dir is
// not reused.
func killLeftovers(pid int) bool {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return false
}

// startResidentHook starts cmd, a resident hook.
func startResidentHook(cmd *exec.Cmd, _ string) error { return cmd.Start() }

// signalResident signals the process group of the resident process pid.
func signalResident(pid int, _ string, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

// killResidentLeftovers kills the process group of the resident process
// pid while its pid still names it.
func killResidentLeftovers(pid int, _ string, zombie bool) {
	if zombie {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
