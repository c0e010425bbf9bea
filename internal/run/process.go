package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// exitPoll is how often a cancelled run checks whether the hook has exited
// during the kill grace.
const exitPoll = 10 * time.Millisecond

// process is one hook process. It runs in its own process group, so that a
// timeout or cancellation ends whatever the hook started too (the group
// gets SIGTERM, then SIGKILL after the kill grace), and the group tells
// the run's leftovers from other runs' (killLeftovers).
type process struct {
	cmd       *exec.Cmd
	killGrace time.Duration
	signalled atomic.Bool
}

// newProcess checks h's path (hook.CheckPath) and prepares h to run until ctx ends, with env, /dev/null as stdin
// and its output going to stdout and stderr, then to get limits.KillGrace
// between SIGTERM and SIGKILL. Once the hook has exited, output that
// processes it left behind hold open is read for at most
// limits.OutputGrace.
func newProcess(ctx context.Context, h *hook.Hook, env []string, limits Limits, stdout, stderr io.Writer) (*process, error) {
	if err := h.CheckPath(); err != nil {
		return nil, err
	}
	stdin, err := hookStdin()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: exec.CommandContext(ctx, h.Path), killGrace: limits.KillGrace}
	p.cmd.Dir, p.cmd.Env = h.Dir, env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdin, stdout, stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = p.stop
	p.cmd.WaitDelay = limits.OutputGrace
	return p, nil
}

// stop ends the process group. os/exec calls it when the context ends
// before the hook has exited, and starts the output grace when it returns.
func (p *process) stop() error {
	pgid := p.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return fmt.Errorf("sending SIGTERM to the hook's process group: %w", err)
	}
	p.signalled.Store(true)
	p.awaitExit()
	// Also after the hook itself exited: children that ignored SIGTERM
	// must not outlive a cancelled run.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// awaitExit returns once os/exec's Wait, which runs beside Cancel, has
// reaped the hook, or the kill grace has passed. It polls, since only Wait
// learns of the exit; this happens only for runs that are cut short.
func (p *process) awaitExit() {
	deadline := time.Now().Add(p.killGrace)
	for time.Now().Before(deadline) {
		if errors.Is(p.cmd.Process.Signal(syscall.Signal(0)), os.ErrProcessDone) {
			return
		}
		time.Sleep(exitPoll)
	}
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
		res.MaxRSS = int64(ru.Maxrss) * maxRSSUnit
	}
}
