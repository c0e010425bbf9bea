// Package residenttest drives a resident hook as the runtime does, for the
// tests of the hook side (the Go SDK, the bash and Python helpers): it
// starts the hook with the request pipe on fd 3 and the reply pipe on fd 4
// (docs/running.md, Resident hooks), prepares each run's files, sends the
// request line and checks the reply's shape. It also reads the spans file
// a traced run wrote, with the runtime's parser.
package residenttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvKeys are the per-run variables, in the order the runtime writes them.
var EnvKeys = []string{"BINDING_CONTEXT_PATH", "KUBERNETES_PATCH_PATH", "METRICS_PATH",
	"VALIDATING_RESPONSE_PATH", "ADMISSION_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH"}

// wait bounds each reply and the exit after the requests end.
const wait = 60 * time.Second

// Process is a hook started as the runtime starts a resident one.
type Process struct {
	// Requests is the request pipe: a test may write its own lines.
	Requests *os.File
	// Log is the hook's stdout and stderr: its log stream.
	Log     *Buffer
	replies *bufio.Reader
	done    chan error
}

// Start starts cmd as a resident hook; env is added to the protocol's
// variables. The process is killed when the test ends.
func Start(t testing.TB, cmd *exec.Cmd, env ...string) *Process {
	t.Helper()
	reqRead, reqWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repRead, repWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Requests: reqWrite, replies: bufio.NewReader(repRead), Log: &Buffer{}, done: make(chan error, 1)}
	cmd.Env = append(os.Environ(), "HOOK_OPERATOR_RESIDENT=1", "HOOK_OPERATOR_REQUEST_FD=3", "HOOK_OPERATOR_REPLY_FD=4")
	cmd.Env = append(cmd.Env, env...)
	cmd.ExtraFiles = []*os.File{reqRead, repWrite}
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqRead.Close()
	repWrite.Close()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		reqWrite.Close()
		repRead.Close()
		_ = cmd.Process.Kill()
	})
	return p
}

// Run is what one run left: the exit code it replied and its variables,
// which name its files.
type Run struct {
	ExitCode int
	Env      map[string]string
}

// File returns the content of the run's file named by variable key; a
// missing file reads as empty, as the runtime reads it.
func (r Run) File(t testing.TB, key string) string {
	t.Helper()
	data, err := os.ReadFile(r.Env[key])
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // missing: empty, as the runtime reads it
		t.Fatal(err)
	}
	return string(data)
}

// Run prepares a run's files as the runtime does, sends the request and
// waits for a reply of the protocol's shape with the run's id.
func (p *Process) Run(t testing.TB, id, contexts string) Run {
	t.Helper()
	env := Files(t, contexts)
	var parts []string
	for _, k := range EnvKeys {
		parts = append(parts, fmt.Sprintf("%q:%q", k, env[k]))
	}
	if _, err := fmt.Fprintf(p.Requests, `{"id":%q,"env":{%s}}`+"\n", id, strings.Join(parts, ",")); err != nil {
		t.Fatalf("writing request %s: %v\nlog:\n%s", id, err, p.Log)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := p.replies.ReadString('\n')
		line <- s
	}()
	var s string
	select {
	case s = <-line:
	case <-time.After(wait):
		t.Fatalf("no reply to run %s in %s\nlog:\n%s", id, wait, p.Log)
	}
	var r struct {
		ID       string `json:"id"`
		ExitCode *int   `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.ID != id || r.ExitCode == nil || !strings.HasSuffix(s, "}\n") {
		t.Fatalf("reply to run %s: %q (%v)\nlog:\n%s", id, s, err, p.Log)
	}
	return Run{ExitCode: *r.ExitCode, Env: env}
}

// Files prepares a run's files as the runtime does for a resident run, in
// a folder of their own: the binding contexts, and paths for the output
// files with nothing there (the hook makes those it writes). It returns
// the run's variables.
func Files(t testing.TB, contexts string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{}
	for _, k := range EnvKeys {
		env[k] = filepath.Join(dir, strings.ToLower(k))
	}
	if err := os.WriteFile(env["BINDING_CONTEXT_PATH"], []byte(contexts), 0o600); err != nil {
		t.Fatal(err)
	}
	return env
}

// Stop closes the request pipe, as the runtime stops a resident hook, and
// returns how the process exited.
func (p *Process) Stop(t testing.TB) error {
	t.Helper()
	p.Requests.Close()
	select {
	case err := <-p.done:
		return err
	case <-time.After(wait):
		t.Fatalf("the hook did not exit in %s after its requests ended\nlog:\n%s", wait, p.Log)
	}
	return nil
}

// Buffer is a bytes.Buffer that a process's output and a test may use at
// once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
