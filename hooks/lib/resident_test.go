package lib_test

// The runtime's side of the resident protocol, for these tests, is
// internal/residenttest; this file fits it to the tests' shorthand.

import (
	"os"
	"os/exec"
	"testing"

	"github.com/hook-operator/hook-operator/internal/residenttest"
)

// residentProcess is a hook started as the runtime starts a resident one.
type residentProcess struct {
	*residenttest.Process
	log      *residenttest.Buffer // stdout and stderr: the hook's log stream
	requests *os.File
}

// startResident starts cmd as a resident hook; env is added to the
// protocol's variables.
func startResident(t testing.TB, cmd *exec.Cmd, env ...string) *residentProcess {
	t.Helper()
	p := residenttest.Start(t, cmd, env...)
	return &residentProcess{Process: p, log: p.Log, requests: p.Requests}
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
	r := p.Run(t, id, contexts)
	return residentRun{exitCode: r.ExitCode, patch: r.File(t, "KUBERNETES_PATCH_PATH"), metrics: r.File(t, "METRICS_PATH")}
}

// stop closes the request pipe and returns how the process exited.
func (p *residentProcess) stop(t testing.TB) error { return p.Stop(t) }

// runFiles prepares a run's files as the runtime does and returns the
// run's variables.
func runFiles(t testing.TB, contexts string) map[string]string {
	return residenttest.Files(t, contexts)
}
