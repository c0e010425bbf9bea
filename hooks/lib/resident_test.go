package lib_test

// A driver of the resident protocol (the runtime's side, written from the
// protocol for these tests): it starts a hook with the request pipe on fd 3
// and the reply pipe on fd 4, prepares each run's files, sends the request
// line and reads the reply.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// runEnvKeys are the per-run variables, in the order the runtime writes them.
var runEnvKeys = []string{"BINDING_CONTEXT_PATH", "KUBERNETES_PATCH_PATH", "METRICS_PATH",
	"VALIDATING_RESPONSE_PATH", "ADMISSION_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH"}

// residentProcess is a hook started as the runtime starts a resident one.
type residentProcess struct {
	cmd      *exec.Cmd
	requests *os.File
	replies  *bufio.Reader
	log      *syncBuffer // stdout and stderr: the hook's log stream
	done     chan error
}

// startResident starts cmd as a resident hook; env is added to the
// protocol's variables.
func startResident(t testing.TB, cmd *exec.Cmd, env ...string) *residentProcess {
	t.Helper()
	reqRead, reqWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repRead, repWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &residentProcess{cmd: cmd, requests: reqWrite, replies: bufio.NewReader(repRead), log: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Env = append(os.Environ(), "HOOK_OPERATOR_RESIDENT=1", "HOOK_OPERATOR_REQUEST_FD=3", "HOOK_OPERATOR_REPLY_FD=4")
	cmd.Env = append(cmd.Env, env...)
	cmd.ExtraFiles = []*os.File{reqRead, repWrite}
	cmd.Stdout, cmd.Stderr = p.log, p.log
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

// residentRun is what one run left: its exit code and output files.
type residentRun struct {
	exitCode       int
	patch, metrics string
}

// run prepares a run's files as the runtime does, sends the request and
// waits for the reply.
func (p *residentProcess) run(t testing.TB, id, contexts string) residentRun {
	t.Helper()
	env := runFiles(t, contexts)
	var parts []string
	for _, k := range runEnvKeys {
		parts = append(parts, fmt.Sprintf("%q:%q", k, env[k]))
	}
	if _, err := fmt.Fprintf(p.requests, `{"id":%q,"env":{%s}}`+"\n", id, strings.Join(parts, ",")); err != nil {
		t.Fatalf("writing request %s: %v\nlog:\n%s", id, err, p.log)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := p.replies.ReadString('\n')
		line <- s
	}()
	var s string
	select {
	case s = <-line:
	case <-time.After(60 * time.Second):
		t.Fatalf("no reply to run %s in 60s\nlog:\n%s", id, p.log)
	}
	var r struct {
		ID       string `json:"id"`
		ExitCode *int   `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.ID != id || r.ExitCode == nil || !strings.HasSuffix(s, "}\n") {
		t.Fatalf("reply to run %s: %q (%v)\nlog:\n%s", id, s, err, p.log)
	}
	read := func(k string) string {
		data, err := os.ReadFile(env[k])
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	return residentRun{exitCode: *r.ExitCode, patch: read("KUBERNETES_PATCH_PATH"), metrics: read("METRICS_PATH")}
}

// runFiles prepares a run's files as the runtime does, in a folder of
// their own: the binding contexts and the empty output files. It returns
// the run's variables.
func runFiles(t testing.TB, contexts string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{}
	for _, k := range runEnvKeys {
		env[k] = filepath.Join(dir, strings.ToLower(k))
		if err := os.WriteFile(env[k], nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(env["BINDING_CONTEXT_PATH"], []byte(contexts), 0o600); err != nil {
		t.Fatal(err)
	}
	return env
}

// stop closes the request pipe, as the runtime stops a resident hook, and
// returns how the process exited.
func (p *residentProcess) stop(t testing.TB) error {
	t.Helper()
	p.requests.Close()
	select {
	case err := <-p.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("the hook did not exit in 60s after its requests ended\nlog:\n%s", p.log)
	}
	return nil
}

// syncBuffer is a bytes.Buffer that a process's output and a test may use
// at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
