package lib_test

// Tests of the Python helper, hooks/lib/hook_operator.py: what it writes
// must be what the bash helpers write for the same calls, and must parse
// with the runtime's own parsers (ops.Parse, metrics.ParseHookOps).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// python3 returns the interpreter's path, or skips the test where there is none.
func python3(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed here, so the Python helper (hooks/lib/hook_operator.py) cannot be tested")
	}
	return path
}

// writePythonHook writes body as an executable Python hook that imports
// the helper as hook.
func writePythonHook(t testing.TB, body string) string {
	t.Helper()
	python3(t)
	lib, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hook.py")
	full := fmt.Sprintf("#!/usr/bin/env python3\nimport json, os, sys\nsys.path.insert(0, %q)\nimport hook_operator as hook\n\n%s\n", lib, body)
	if err := os.WriteFile(path, []byte(full), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPython runs a one-shot Python hook with contexts as its binding
// contexts and returns what it did; metrics is the $METRICS_PATH file.
func runPython(t *testing.T, contexts, body string, args ...string) (r result, metricsFile string) {
	t.Helper()
	env := runFiles(t, contexts)
	cmd := exec.Command(writePythonHook(t, body), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	patch, _ := os.ReadFile(env["KUBERNETES_PATCH_PATH"])
	m, _ := os.ReadFile(env["METRICS_PATH"])
	return result{stdout: stdout.String(), stderr: stderr.String(), patch: string(patch), err: err}, string(m)
}

// TestPythonOperationsMatchBash: every operation function writes the line
// the bash helper writes for the same call, and the runtime parses them.
func TestPythonOperationsMatchBash(t *testing.T) {
	bash := mustRun(t, contexts, `
ticket='{"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "t1", "namespace": "ns", "uid": "u-1"}}'
cm='{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t1-booking", "namespace": "ns"}, "data": {"from": "A"}}'
hook::apply "$cm" "$ticket"
hook::apply --force "$cm"
hook::apply_set bookings "$ticket" "[$cm]"
hook::apply_set --force --no-owner empty "$ticket" "[]"
hook::status flights.com/v1/FlightTicket ns t1 '{"phase": "Booked", "message": null}' observedGeneration
hook::status --ignore-missing --observed-generation 4 FlightTicket ns t1 '{"phase": "Failed"}'
hook::create "$cm"
hook::create_if_not_exists "$(jq -c --argjson refs "$(hook::owner_references "$ticket")" '.metadata.ownerReferences = $refs' <<<"$cm")"
hook::create_or_update "$cm"
hook::merge_patch --ignore-missing --status v1/ConfigMap ns t1-booking '{"status": {"x": 1}}'
hook::merge_patch --subresource scale apps/v1/Deployment ns web '{"spec": {"replicas": 2}}'
hook::merge_patch Namespace "" ns '{"metadata": {"labels": {"a": "b"}}}'
hook::json_patch --ignore-missing ConfigMap ns c '[{"op": "remove", "path": "/data/a"}]'
hook::jq_patch --status ConfigMap ns t1-booking '.data.n = "1"'
hook::delete apps/v1/StatefulSet ns db
hook::delete --background ConfigMap ns t1-booking
hook::delete --orphan ReplicaSet ns rs
hook::requeue ns t1 2s
hook::requeue --kind flights.com/v1/FlightTicket ns t1 1m tickets
hook::emit '{"operation": "Delete", "kind": "Pod", "namespace": "ns", "name": "p"}'
`)
	py, _ := runPython(t, contexts, `
ticket = {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "t1", "namespace": "ns", "uid": "u-1"}}
cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t1-booking", "namespace": "ns"}, "data": {"from": "A"}}
def handle():
    hook.apply(cm, ticket)
    hook.apply(cm, force=True)
    hook.apply_set("bookings", ticket, [cm])
    hook.apply_set("empty", ticket, [], force=True, owner=False)
    hook.status("flights.com/v1/FlightTicket", "ns", "t1", {"phase": "Booked", "message": None}, observed_generation=True)
    hook.status("FlightTicket", "ns", "t1", {"phase": "Failed"}, observed_generation=4, ignore_missing=True)
    hook.create(cm)
    hook.create_if_not_exists(dict(cm, metadata=dict(cm["metadata"], ownerReferences=hook.owner_references(ticket))))
    hook.create_or_update(cm)
    hook.merge_patch("v1/ConfigMap", "ns", "t1-booking", {"status": {"x": 1}}, ignore_missing=True, subresource="status")
    hook.merge_patch("apps/v1/Deployment", "ns", "web", {"spec": {"replicas": 2}}, subresource="scale")
    hook.merge_patch("Namespace", "", "ns", {"metadata": {"labels": {"a": "b"}}})
    hook.json_patch("ConfigMap", "ns", "c", [{"op": "remove", "path": "/data/a"}], ignore_missing=True)
    hook.jq_patch("ConfigMap", "ns", "t1-booking", '.data.n = "1"', subresource="status")
    hook.delete("apps/v1/StatefulSet", "ns", "db")
    hook.delete("ConfigMap", "ns", "t1-booking", background=True)
    hook.delete("ReplicaSet", "ns", "rs", orphan=True)
    hook.requeue("ns", "t1", 2)
    hook.requeue("ns", "t1", "1m", binding="tickets", kind="flights.com/v1/FlightTicket")
    hook.emit({"operation": "Delete", "kind": "Pod", "namespace": "ns", "name": "p"})
hook.run(handle)
`)
	if py.err != nil {
		t.Fatalf("python hook: %v\nstderr:\n%s", py.err, py.stderr)
	}
	if got, want := lines(t, py.patch), lines(t, bash.patch); !reflect.DeepEqual(got, want) {
		t.Errorf("Python wrote:\n%s\nbash wrote:\n%s", py.patch, bash.patch)
	}
	parsed := parseOps(t, py.patch)
	var types []string
	for _, op := range parsed {
		if !slices.Contains(types, op.Type) {
			types = append(types, op.Type)
		}
	}
	for _, typ := range ops.Types {
		if !slices.Contains(types, typ) {
			t.Errorf("no Python call above writes %s", typ)
		}
	}
}

// TestPythonContextsMatchBash: the reading functions return what the bash
// helpers print for the same binding contexts.
func TestPythonContextsMatchBash(t *testing.T) {
	for _, tc := range []struct{ bash, python string }{
		{`hook::contexts`, `hook.contexts()`},
		{`hook::objects`, `hook.objects()`},
		{`hook::objects tickets`, `hook.objects("tickets")`},
		{`hook::latest_objects`, `hook.latest_objects()`},
		{`hook::snapshot tickets`, `hook.snapshot("tickets")`},
		{`hook::snapshots`, `[hook.snapshots()]`},
		{`hook::snapshot_object tickets ns b`, `[hook.snapshot_object("tickets", "ns", "b")]`},
		{`hook::snapshot_object tickets ns nope`, `[o for o in [hook.snapshot_object("tickets", "ns", "nope")] if o]`},
	} {
		bash := mustRun(t, contexts, tc.bash)
		py, _ := runPython(t, contexts, "def handle():\n    for v in "+tc.python+":\n        print(json.dumps(v))\nhook.run(handle)")
		if py.err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", tc.python, py.err, py.stderr)
		}
		if got, want := lines(t, py.stdout), lines(t, bash.stdout); !reflect.DeepEqual(got, want) {
			t.Errorf("%s printed:\n%s\n%s printed:\n%s", tc.python, py.stdout, tc.bash, bash.stdout)
		}
	}
}

// TestPythonMetricsAndLog: metric lines parse with the runtime's parser,
// and log lines are the JSON objects the runtime merges.
func TestPythonMetricsAndLog(t *testing.T) {
	r, m := runPython(t, `[]`, `
def handle():
    hook.metric("tickets_booked", 1, action="add", labels={"route": "A-B"})
    hook.metric("queue_length", 3.5, group="queues")
    hook.metric("latency_seconds", 0.2, action="observe", buckets=[0.1, 1])
    hook.expire_metrics("old")
    hook.log("info", "booked", ticket="ns/t1", count=2)
hook.run(handle)
`)
	if r.err != nil {
		t.Fatalf("%v\nstderr:\n%s", r.err, r.stderr)
	}
	parsed, err := metrics.ParseHookOps([]byte(m))
	if err != nil || len(parsed) != 4 || parsed[0].Labels["route"] != "A-B" || parsed[1].Group != "queues" ||
		len(parsed[2].Buckets) != 2 || parsed[3].Action != metrics.ActionExpire {
		t.Errorf("metrics.ParseHookOps: %+v, %v\nfile:\n%s", parsed, err, m)
	}
	if rec := decode(t, r.stderr).(map[string]any); rec["level"] != "info" || rec["msg"] != "booked" || rec["ticket"] != "ns/t1" || rec["count"] != 2.0 {
		t.Errorf("log line %q", r.stderr)
	}
}

// TestPythonErrors: a wrong call fails the run with a message naming the
// function, and config and arguments behave as the contract says.
func TestPythonErrors(t *testing.T) {
	for call, want := range map[string]string{
		`hook.create([1])`:                                             "create: OBJECT must be a dict",
		`hook.status("Kind", "ns", "", {})`:                            "status: KIND and NAME must not be empty",
		`hook.status("Kind", "ns", "n", {}, observed_generation=-1)`:   "status: observed_generation is True, False or a whole number",
		`hook.merge_patch("Kind", "ns", "n", {}, subresource="Sc")`:    `merge_patch: subresource is a lowercase word`,
		`hook.delete("Kind", "ns", "n", background=True, orphan=True)`: "delete: background and orphan exclude each other",
		`hook.snapshot("nope")`:                                        `snapshot: no binding context carries a snapshot of \"nope\"`,
		`hook.metric("x", "1")`:                                        "metric: VALUE of x must be a number",
		`hook.apply({"kind": "A"}, parent={"kind": "B"})`:              "apply: PARENT needs a kind and a name",
		`hook.die("gave up", reason="x")`:                              `"msg": "gave up", "reason": "x"`,
	} {
		r, _ := runPython(t, contexts, "def handle():\n    "+call+"\nhook.run(handle)")
		if exitCode(r.err) != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %v, stderr %q; want exit 1 and %q", call, r.err, r.stderr, want)
		}
	}

	r, _ := runPython(t, `[]`, "def handle():\n    raise SystemExit(3)\nhook.run(handle, 'configVersion: v1\\nonStartup: 1\\n')")
	if exitCode(r.err) != 3 {
		t.Errorf("sys.exit(3) in the handler: exit %v", r.err)
	}
	r, _ = runPython(t, `[]`, "def handle():\n    print('called')\nhook.run(handle, 'configVersion: v1\\nonStartup: 1\\n')", "--config")
	if r.err != nil || r.stdout != "configVersion: v1\nonStartup: 1\n" {
		t.Errorf("--config: exit %v, stdout %q", r.err, r.stdout)
	}
	r, _ = runPython(t, `[]`, "def handle():\n    pass\nhook.run(handle)", "--help")
	if exitCode(r.err) != 2 || !strings.Contains(r.stderr, "unexpected arguments") {
		t.Errorf("--help: exit %v, stderr %q", r.err, r.stderr)
	}
}

// residentPython is a Python hook whose handler does what its first binding
// context's name says, and writes the operations and metrics of a run
// through the variables the loop set.
const residentPython = `
import subprocess
runs = 0
def handle():
    global runs
    runs += 1
    binding = hook.contexts()[0]["binding"]
    hook.log("info", "run", binding=binding)
    print("stdout of run", binding)
    with open(os.environ["METRICS_PATH"], "a") as f:
        f.write(json.dumps({"name": "run", "action": "set", "value": runs, "labels": {"pid": str(os.getpid())}}) + "\n")
    fd = os.environ["HOOK_OPERATOR_REPLY_FD"]
    if subprocess.run(["sh", "-c", "true >&" + fd], close_fds=False, stderr=subprocess.DEVNULL).returncode == 0:
        hook.die("the reply pipe is open in the handler's programs")
    if binding == "raise":
        raise RuntimeError("told to raise")
    if binding == "die":
        hook.die("told to die")
    if binding == "exit3":
        sys.exit(3)
    for item in hook.objects():
        hook.status("flights.com/v1/FlightTicket", "ns", item["object"]["metadata"]["name"], {"phase": "Seen"})
hook.run(handle)
`

// TestPythonResident serves runs in one Python process; a failing run
// fails only itself, and module state (runs) stays between runs.
func TestPythonResident(t *testing.T) {
	p := startResident(t, exec.Command(writePythonHook(t, residentPython)))
	runs := []ticketRun{{"tickets", 0}, {"raise", 1}, {"die", 1}, {"exit3", 3}, {"tickets", 0}}
	p.serveTickets(t, runs, func(run int, metric map[string]any) {
		if metric["value"] != float64(run) {
			t.Errorf("run %d: the module's counter is %v, want %d", run, metric["value"], run)
		}
	}, "stdout of run exit3", "RuntimeError: told to raise", `"msg": "told to die"`)

	p = startResident(t, exec.Command(writePythonHook(t, "hook.run(lambda: None)")))
	p.refuses(t, `{"id":1,"env":{}}`, "request 1 is not")
}

// BenchmarkPythonOneShot times a run of a Python hook that does nothing,
// started for the run: the interpreter's start and the helper's import.
func BenchmarkPythonOneShot(b *testing.B) {
	benchOneShot(b, writePythonHook(b, "hook.run(lambda: None)"))
}

// BenchmarkPythonResident times a run of the same hook served by run()'s
// resident loop.
func BenchmarkPythonResident(b *testing.B) {
	benchResident(b, exec.Command(writePythonHook(b, "hook.run(lambda: None)")))
}
