package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// operator is one running `hook-operator start` with one benchmark hook.
type operator struct {
	cmd *exec.Cmd
	// started is taken just before the process is started: sync times
	// count from it.
	started time.Time
	out     *hookOutput
	// socket is the debug socket serving pprof profiles, or "".
	socket string
	done   chan struct{}

	mu       sync.Mutex
	logTail  []string
	failures int
	exited   error
	// connected is when the log said the operator connected to the
	// cluster: its hooks are loaded (their --config runs are done).
	connected time.Time
}

// features are the start flags of the binary that the harness adapts to:
// the binary grows them over time, and the harness runs against the tree
// it is in.
type features struct {
	// listen: --listen-address, whose default port several operators (and
	// other people's tests) cannot share.
	listen bool
	// socket: --debug-socket, whose default path several operators cannot
	// share.
	socket bool
	// pprof: --pprof serves profiles on the debug socket.
	pprof bool
}

// probeFeatures reads which of the features the binary's start supports.
func probeFeatures(binary string) (features, error) {
	out, err := exec.Command(binary, "start", "--help").CombinedOutput()
	if err != nil {
		return features{}, fmt.Errorf("%s start --help: %v\n%s", binary, err, out)
	}
	help := string(out)
	f := features{
		listen: strings.Contains(help, "--listen-address"),
		socket: strings.Contains(help, "--debug-socket"),
	}
	f.pprof = f.socket && strings.Contains(help, "--pprof")
	return f, nil
}

// launch says how to start one operator.
type launch struct {
	binary, kubeconfig, hooksDir string
	// dir is the run's own folder: hook configuration and output, hooks'
	// temp dirs, the debug socket.
	dir string
	// config is the hook configuration the hook prints.
	config []byte
	// tmpDir is the operator's --tmp-dir; "" means dir.
	tmpDir   string
	features features
	// pprof serves profiles on the debug socket.
	pprof bool
}

// startOperator writes the hook configuration to a file in l.dir, and
// starts the operator with the hooks in l.hooksDir. The hook reads its
// configuration through $BENCH_CONFIG and writes its marks to $BENCH_OUT
// (see bench/hooks).
func startOperator(l launch) (*operator, error) {
	configPath := filepath.Join(l.dir, "hook-config.json")
	outPath := filepath.Join(l.dir, "hook-out.txt")
	if err := os.WriteFile(configPath, l.config, 0o644); err != nil {
		return nil, err
	}
	tmpDir := l.tmpDir
	if tmpDir == "" {
		tmpDir = l.dir
	}
	args := []string{"start", "--hooks-dir", l.hooksDir, "--kubeconfig", l.kubeconfig,
		"--log-format", "json", "--shutdown-grace-period", "2s", "--tmp-dir", tmpDir}
	var socket string
	if l.features.listen {
		// The metrics listener runs as in production, on a free port.
		args = append(args, "--listen-address", "127.0.0.1:0")
	}
	if l.features.socket {
		socket = filepath.Join(l.dir, "debug.sock")
		args = append(args, "--debug-socket", socket)
	}
	if l.pprof {
		args = append(args, "--pprof")
	}
	cmd := exec.Command(l.binary, args...)
	cmd.Env = append(os.Environ(), "BENCH_CONFIG="+configPath, "BENCH_OUT="+outPath)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	o := &operator{cmd: cmd, out: newHookOutput(outPath), socket: socket, done: make(chan struct{})}
	o.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", l.binary, err)
	}
	go func() {
		o.read(stderr)
		err := cmd.Wait()
		o.mu.Lock()
		o.exited = err
		o.mu.Unlock()
		close(o.done)
	}()
	return o, nil
}

// read keeps the end of the operator's log and counts failed hook runs.
func (o *operator) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		o.mu.Lock()
		if strings.Contains(line, `"msg":"hook failed`) {
			o.failures++
		}
		if o.connected.IsZero() && strings.Contains(line, `"msg":"connected to the cluster"`) {
			o.connected = time.Now()
		}
		o.logTail = append(o.logTail, line)
		if len(o.logTail) > 200 {
			o.logTail = o.logTail[100:]
		}
		o.mu.Unlock()
	}
}

// Connected returns when the operator logged that it connected to the
// cluster, or the zero time.
func (o *operator) Connected() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.connected
}

// Failures returns how many hook runs failed so far.
func (o *operator) Failures() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failures
}

// Log returns the last lines of the operator's log.
func (o *operator) Log(lines int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	tail := o.logTail
	if len(tail) > lines {
		tail = tail[len(tail)-lines:]
	}
	return strings.Join(tail, "\n")
}

// Pid returns the operator's process id.
func (o *operator) Pid() int { return o.cmd.Process.Pid }

// errExited says the operator ended before the harness stopped it.
var errExited = errors.New("the operator exited")

// until polls the hook's output every 20 ms until cond holds, failing after
// timeout, when ctx ends, or when the operator exits.
func (o *operator) until(ctx context.Context, timeout time.Duration, what string, cond func(*hookOutput) bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := o.out.poll(); err != nil {
			return err
		}
		if cond(o.out) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s; operator log:\n%s", what, timeout, o.Log(20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.done:
			o.mu.Lock()
			err := o.exited
			o.mu.Unlock()
			return fmt.Errorf("%s: %w (%v); its log:\n%s", what, errExited, err, o.Log(20))
		case <-tick.C:
		}
	}
}

// WaitSync waits for the hook's first Synchronization mark and returns it.
func (o *operator) WaitSync(ctx context.Context, timeout time.Duration) (mark, error) {
	err := o.until(ctx, timeout, "Synchronization run", func(h *hookOutput) bool { return len(h.syncs) > 0 })
	if err != nil {
		return mark{}, err
	}
	return o.out.syncs[0], nil
}

// WaitSeen waits until the hook has had an event for every name. It
// returns how many it never had if timeout passes first.
func (o *operator) WaitSeen(ctx context.Context, timeout time.Duration, names []string) (missed int, err error) {
	err = o.until(ctx, timeout, "events", func(h *hookOutput) bool {
		for _, n := range names {
			if _, ok := h.seen[n]; !ok {
				return false
			}
		}
		return true
	})
	if err == nil || ctx.Err() != nil {
		return 0, err
	}
	for _, n := range names {
		if _, ok := o.out.seen[n]; !ok {
			missed++
		}
	}
	return missed, err
}

// Memory reads the operator's resident memory.
func (o *operator) Memory() (memory, error) { return readMemory(o.Pid()) }

// CPU reads the CPU time the operator process itself has used (not its
// hooks).
func (o *operator) CPU() (time.Duration, error) { return readCPU(o.Pid()) }

// Stop sends SIGTERM and waits for the operator to exit, killing it after
// 15 s. Stopping twice is fine.
func (o *operator) Stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(15 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}
