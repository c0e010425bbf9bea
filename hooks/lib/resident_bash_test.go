package lib_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/ops"
)

// residentScript is a bash hook whose handler does what its first binding
// context's name says, and records in a metric (written to $METRICS_PATH
// directly, as one-shot code does) its process, how many runs its
// variable counted, and its working directory.
const residentScript = `
started=$$
runs=0
handle() {
  runs=$((runs + 1))
  printf '{"name":"run","action":"set","value":1,"labels":{"pid":"%s","runs":"%s","pwd":"%s"}}\n' "$started" "$runs" "$PWD" >>"${METRICS_PATH:-/dev/null}"
  cd /
  if { true >&"${HOOK_OPERATOR_REPLY_FD:-4}"; } 2>/dev/null; then hook::die "the reply pipe is open in the handler"; fi
  local binding
  binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
  hook::log info "run" binding="$binding"
  case $binding in
  die) hook::die "told to die" ;;
  false) false; echo "not reached" ;;
  exit3) exit 3 ;;
  esac
  hook::objects | while read -r item; do
    local ns name
    hook::read "$item" '[.object.metadata.namespace, .object.metadata.name]' ns name
    hook::status flights.com/v1/FlightTicket "$ns" "$name" '{"phase": "Seen"}'
  done
}
hook::resident handle
`

// writeResidentHook writes script as an executable hook that sources hook.sh
// under set -euo pipefail.
func writeResidentHook(t testing.TB, script string) string {
	t.Helper()
	lib, err := filepath.Abs("hook.sh")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hook.sh")
	full := "#!/usr/bin/env bash\nset -euo pipefail\nsource " + lib + "\n" + script
	if err := os.WriteFile(path, []byte(full), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func ticketContext(binding string) string {
	return fmt.Sprintf(`[{"binding":%q,"type":"Event","watchEvent":"Added","object":{"apiVersion":"flights.com/v1","kind":"FlightTicket","metadata":{"name":"t1","namespace":"ns"}}}]`, binding)
}

// TestResidentBash serves runs in one bash process; each run starts from
// the state before the loop, and a failing run fails only itself.
func TestResidentBash(t *testing.T) {
	cmd := exec.Command(writeResidentHook(t, residentScript))
	cmd.Dir = t.TempDir()
	p := startResident(t, cmd)
	runs := []ticketRun{{"tickets", 0}, {"die", 1}, {"false", 1}, {"exit3", 3}, {"tickets", 0}}
	p.serveTickets(t, runs, func(run int, metric map[string]any) {
		labels := metric["labels"].(map[string]any)
		if labels["runs"] != "1" || labels["pwd"] != cmd.Dir {
			t.Errorf("run %d began with runs=%v in %v: state of an earlier run leaked (want 1 in %s)", run, labels["runs"], labels["pwd"], cmd.Dir)
		}
	}, `"msg":"run","binding":"exit3"`, `"msg":"told to die"`)
	if strings.Contains(p.log.String(), "not reached") {
		t.Errorf("set -e did not end the failing run:\n%s", p.log)
	}
}

// TestResidentBashOneShot: without HOOK_OPERATOR_RESIDENT the same hook
// handles one run and exits with the handler's status.
func TestResidentBashOneShot(t *testing.T) {
	r := mustRun(t, ticketContext("tickets"), residentScript)
	if parsed, err := ops.Parse([]byte(r.patch)); err != nil || len(parsed) != 1 || parsed[0].Type != "Status" {
		t.Errorf("one-shot run wrote %q: %v", r.patch, err)
	}
	r = runScript(t, ticketContext("exit3"), residentScript)
	if code := exitCode(r.err); code != 3 {
		t.Errorf("one-shot run exited %v, want 3\nstderr:\n%s", r.err, r.stderr)
	}
}

// TestResidentBashErrors: a bad call or a request that is not the
// protocol's ends the process with code 2 and the reason.
func TestResidentBashErrors(t *testing.T) {
	r := runScript(t, `[]`, `hook::resident no_such_function`)
	if exitCode(r.err) != 2 || !strings.Contains(r.stderr, "hook::resident: usage") {
		t.Errorf("exit %v, stderr %q", r.err, r.stderr)
	}

	for _, request := range []string{`{"id":"x","env":{}}`, `{"id":"1","env":{"A":"x",}}`, `{"id":"1","env":{"A":"a"b"}}`, `{"id":"1","env":{"A":"a\qb"}}`, `not json`} {
		p := startResident(t, exec.Command(writeResidentHook(t, `handle() { :; }; hook::resident handle`)))
		p.refuses(t, request, "hook::resident: request 1 is not")
	}

	p := startResident(t, exec.Command(writeResidentHook(t, `handle() { :; }; hook::resident handle`)), "HOOK_OPERATOR_REPLY_FD=")
	if err := p.stop(t); exitCode(err) != 2 || !strings.Contains(p.log.String(), "must name file descriptors") {
		t.Errorf("without a reply fd: exit %v, log %q", err, p.log)
	}
}

// exitCode is the exit status in err, 0 for nil, -1 for other errors.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}

// benchHandlers are the handlers the benchmarks time: one that does
// nothing, so only the start or the loop is measured, and one that writes
// one operation with hook::status, which starts jq once.
var benchHandlers = []struct{ name, body string }{
	{"empty", `:`},
	{"one-jq", `hook::status flights.com/v1/FlightTicket ns t1 '{"phase": "Seen"}'`},
}

// BenchmarkBashOneShot times a run of a bash hook started for the run, as
// one-shot runs are: bash, sourcing hook.sh, the handler.
func BenchmarkBashOneShot(b *testing.B) {
	for _, h := range benchHandlers {
		b.Run(h.name, func(b *testing.B) {
			benchOneShot(b, writeResidentHook(b, benchScript(h.body)))
		})
	}
}

// BenchmarkBashResident times a run of the same hook served by
// hook::resident: a request, the handler in a subshell, the reply.
func BenchmarkBashResident(b *testing.B) {
	for _, h := range benchHandlers {
		b.Run(h.name, func(b *testing.B) {
			benchResident(b, exec.Command(writeResidentHook(b, benchScript(h.body))))
		})
	}
}

func benchScript(body string) string {
	return "handle() { " + body + "; }\nhook::resident handle\n"
}
