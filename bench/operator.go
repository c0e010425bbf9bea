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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// operator is one running `hook-operator start` with one benchmark hook.
type operator struct {
	cmd  *exec.Cmd
	impl *implementation
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
	// logged maps each of the launch's watchLines to when a log line
	// first held it.
	watchLines []string
	logged     map[string]time.Time
	// metricsAddr is the host:port of /metrics, from the log.
	metricsAddr string
}

// launch says how to start one operator.
type launch struct {
	impl                 *implementation
	kubeconfig, hooksDir string
	// dir is the run's own folder: hook configuration and output, hooks'
	// temp dirs, the debug socket.
	dir string
	// config is the hook configuration the hook prints.
	config []byte
	// tmpDir is the operator's temp folder for hook runs; "" means dir.
	tmpDir string
	// pprof serves profiles on the debug socket.
	pprof bool
	// extra are more arguments of our start (the admission scenario's
	// webhook flags).
	extra []string
	// watchLines are log texts whose first appearance the operator notes
	// (see operator.Logged).
	watchLines []string
	// resident adds settings.resident: true to config (for ours only:
	// shell-operator knows no residency and runs the hook once per run).
	resident bool
}

// startOperator writes the hook configuration to a file in l.dir, and
// starts the operator with the hooks in l.hooksDir. The hook reads its
// configuration through $BENCH_CONFIG and writes its marks to $BENCH_OUT
// (see bench/hooks).
func startOperator(l launch) (*operator, error) {
	configPath := filepath.Join(l.dir, "hook-config.json")
	outPath := filepath.Join(l.dir, "hook-out.txt")
	if l.resident && l.impl.name == ours {
		var err error
		if l.config, err = withResident(l.config); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(configPath, l.config, 0o644); err != nil {
		return nil, err
	}
	if l.tmpDir == "" {
		l.tmpDir = l.dir
	}
	args, socket, err := l.impl.args(l)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(l.impl.binary, args...)
	cmd.Env = append(os.Environ(), "BENCH_CONFIG="+configPath, "BENCH_OUT="+outPath)
	// One pipe for both streams: shell-operator logs to stdout, ours to
	// stderr.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	o := &operator{cmd: cmd, impl: l.impl, out: newHookOutput(outPath), socket: socket, done: make(chan struct{}),
		watchLines: l.watchLines, logged: map[string]time.Time{}}
	o.started = time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start %s: %w", l.impl.binary, err)
	}
	go func() {
		o.read(r)
		r.Close()
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
		if o.impl.failed(line) {
			o.failures++
		}
		if o.connected.IsZero() && o.impl.connected != "" && strings.Contains(line, o.impl.connected) {
			o.connected = time.Now()
		}
		for _, w := range o.watchLines {
			if _, ok := o.logged[w]; !ok && strings.Contains(line, w) {
				o.logged[w] = time.Now()
			}
		}
		if o.metricsAddr == "" && strings.Contains(line, "serving /metrics") {
			if m := addressField.FindStringSubmatch(line); m != nil {
				o.metricsAddr = m[1]
			}
		}
		o.logTail = append(o.logTail, line)
		if len(o.logTail) > 200 {
			o.logTail = o.logTail[100:]
		}
		o.mu.Unlock()
	}
}

// addressField is the address in our log line about the /metrics listener.
var addressField = regexp.MustCompile(`"address":"([^"]+)"`)

// Logged returns when a log line first held text, one of the launch's
// watchLines, or the zero time.
func (o *operator) Logged(text string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logged[text]
}

// WaitLogged waits until a log line has held text (one of the launch's
// watchLines) and returns when it first did.
func (o *operator) WaitLogged(ctx context.Context, timeout time.Duration, text string) (time.Time, error) {
	err := o.until(ctx, timeout, "the log line "+strconv.Quote(text), func(*hookOutput) bool { return !o.Logged(text).IsZero() })
	return o.Logged(text), err
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
