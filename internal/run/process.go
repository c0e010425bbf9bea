package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// wait waits for cmd and its output copying. When ctx ends first, the hook's
// process group gets SIGTERM, then SIGKILL after the kill grace; signalled
// reports that this happened.
func (r *Runner) wait(ctx context.Context, cmd *exec.Cmd) (signalled bool, err error) {
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	watched := make(chan bool)
	go func() {
		select {
		case <-exited:
			watched <- false
			return
		case <-ctx.Done():
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		grace := time.NewTimer(r.killGrace())
		defer grace.Stop()
		select {
		case <-exited:
		case <-grace.C:
		}
		// Also after the hook itself exited: children that ignored SIGTERM
		// must not outlive a cancelled run.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		watched <- true
	}()
	err = cmd.Wait()
	close(exited)
	return <-watched, err
}

// exitError describes a failed run by its exit code or signal.
func exitError(hookName string, ps *os.ProcessState, waitErr error, stderrTail string) error {
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return fmt.Errorf("hook %s: %w", hookName, waitErr)
	}
	how := fmt.Sprintf("exit code %d", ps.ExitCode())
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		how = "killed by signal " + ws.Signal().String()
	}
	if stderrTail == "" {
		return fmt.Errorf("hook %s: %s (no stderr output)", hookName, how)
	}
	return fmt.Errorf("hook %s: %s; stderr ends with:\n%s", hookName, how, stderrTail)
}

// setUsage copies the process's resource usage into res.
func setUsage(res *Result, ps *os.ProcessState) {
	if ps == nil {
		return
	}
	res.UserCPU = ps.UserTime()
	res.SystemCPU = ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		// Linux reports ru_maxrss in KiB.
		res.MaxRSS = int64(ru.Maxrss) * 1024
	}
}
