package lib_test

// The runtime's side of the resident protocol, for these tests, is
// internal/residenttest; this file fits it to the tests' shorthand.

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/ops"
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

// request is a run's request line, its files prepared as the runtime does;
// extra is added to its env object as is (`,"NAME":"value"...`).
func request(t testing.TB, id, extra string) string {
	env := residenttest.Files(t, `[]`)
	var parts []string
	for _, k := range residenttest.EnvKeys {
		parts = append(parts, fmt.Sprintf("%q:%q", k, env[k]))
	}
	return `{"id":"` + id + `","env":{` + strings.Join(parts, ",") + extra + "}}\n"
}

// serve writes requests to the process and waits for it to exit, which
// must be without an error.
func (p *residentProcess) serve(t testing.TB, requests string) {
	t.Helper()
	if _, err := p.requests.WriteString(requests); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(t); err != nil {
		t.Fatalf("exit %v\nlog:\n%s", err, p.log)
	}
}

// ticketRun is a run of serveTickets: the binding its context names,
// which says what the hook does, and the exit code it must end with.
type ticketRun struct {
	binding string
	code    int
}

// serveTickets serves runs one by one, each with ticketContext, and fails
// t unless each ends with its code, each that succeeds wrote one Status
// operation for t1, one process served them all and exits 0 when the
// requests end, and its log stream holds logged. check sees each run's
// number and its metric, decoded.
func (p *residentProcess) serveTickets(t *testing.T, runs []ticketRun, check func(run int, metric map[string]any), logged ...string) {
	t.Helper()
	pids := map[string]bool{}
	for i, tc := range runs {
		r := p.run(t, fmt.Sprint(i+1), ticketContext(tc.binding))
		if r.exitCode != tc.code {
			t.Fatalf("run %d (%s): exit code %d, want %d\nlog:\n%s", i+1, tc.binding, r.exitCode, tc.code, p.log)
		}
		m := decode(t, r.metrics).(map[string]any)
		pids[m["labels"].(map[string]any)["pid"].(string)] = true
		check(i+1, m)
		if tc.code != 0 {
			continue
		}
		parsed, err := ops.Parse([]byte(r.patch))
		if err != nil || len(parsed) != 1 || parsed[0].Type != ops.Status || parsed[0].Name != "t1" {
			t.Errorf("run %d wrote %q: %v, %+v", i+1, r.patch, err, parsed)
		}
	}
	if len(pids) != 1 {
		t.Errorf("runs were served by processes %v, want one", pids)
	}
	if err := p.stop(t); err != nil {
		t.Errorf("exit at the end of the requests: %v, want 0\nlog:\n%s", err, p.log)
	}
	for _, want := range logged {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("the log stream lacks %q:\n%s", want, p.log)
		}
	}
}

// refuses writes request to the process, and fails t unless it exits with
// code 2 and its log stream holds want.
func (p *residentProcess) refuses(t *testing.T, request, want string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.requests, request); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(t); exitCode(err) != 2 || !strings.Contains(p.log.String(), want) {
		t.Errorf("request %s: exit %v, log %q; want exit 2 and %q", request, err, p.log, want)
	}
}

// benchOneShot times runs of the hook at hookPath, each started for its
// run, as one-shot runs are.
func benchOneShot(b *testing.B, hookPath string) {
	for b.Loop() {
		cmd := exec.Command(hookPath)
		cmd.Env = os.Environ()
		for k, v := range runFiles(b, ticketContext("tickets")) {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// benchResident times runs of a hook that cmd starts as a resident one,
// each a request.
func benchResident(b *testing.B, cmd *exec.Cmd) {
	p := startResident(b, cmd)
	i := 0
	for b.Loop() {
		i++
		if r := p.run(b, fmt.Sprint(i), ticketContext("tickets")); r.exitCode != 0 {
			b.Fatalf("run %d failed: %s", i, p.log)
		}
	}
	if err := p.stop(b); err != nil {
		b.Fatal(err)
	}
}
