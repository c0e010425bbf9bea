package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// stderrTail is how much of a failed --config run's stderr an error quotes.
const stderrTail = 2048

// runConfig runs `<path> --config` in dir with env, without a shell, and
// returns its stdout, which may be at most max bytes: the pipe is closed
// after that. On timeout the whole process group is killed, so that a
// script's children do not outlive it. The error says what to change.
func runConfig(ctx context.Context, path, dir string, env []string, timeout time.Duration, max int64) ([]byte, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, "--config")
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child left running in the background may hold stdout open; do not
	// wait for it longer than this once the hook itself has exited.
	cmd.WaitDelay = 2 * time.Second
	stdout := &cappedBuffer{max: max}
	stderr := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	switch {
	case stdout.over:
		return nil, fmt.Errorf("--config printed more than %s, the most the operator reads from a hook; "+
			"print only the configuration (logs go to stderr), or raise the limit with start's --max-hook-output", limit.Size(max))
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return stdout.buf.Bytes(), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case runCtx.Err() != nil:
		return nil, fmt.Errorf("--config did not finish within %s, so its process group was killed; make --config print the configuration and exit without waiting for anything, or raise the config timeout%s",
			timeout, stderr.quote())
	case errors.Is(err, syscall.ENOEXEC):
		return nil, fmt.Errorf("cannot be run: %v; start the file with a #! line naming its interpreter, such as #!/usr/bin/env bash", err)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("cannot be run: %v; check the file's mode and its interpreter's", err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil, fmt.Errorf("--config failed (%v); make --config print the configuration and exit 0%s", exit, stderr.quote())
	}
	return nil, fmt.Errorf("cannot be run: %w", err)
}

// cappedBuffer keeps what is written to it up to max bytes, and fails the
// write that would pass max: os/exec then closes the pipe, so that a hook
// printing without end gets EPIPE instead of filling the operator's memory.
type cappedBuffer struct {
	buf  bytes.Buffer // not embedded: io.Copy would use its ReadFrom, past Write
	max  int64
	over bool
}

var errTooMuchOutput = errors.New("too much output")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if int64(c.buf.Len()+len(p)) > c.max {
		c.over = true
		return 0, errTooMuchOutput
	}
	return c.buf.Write(p)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

// quote renders the tail for an error message, or "" when it is empty.
func (t *tailBuffer) quote() string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
	if s == "" {
		return ""
	}
	if t.cut {
		s = "..." + s
	}
	return "; its stderr ends with: " + s
}
