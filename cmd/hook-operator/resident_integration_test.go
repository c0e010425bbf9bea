package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/gobuild"
)

// Resident hooks under the real binary: the Go hook of testdata/residenthook
// (its process kept, restarted, recycled) and bash hooks speaking the
// protocol (residentLoop) for admission, conversion and --dry-run.

// residentLoop is a resident bash hook without the helpers (the loop of
// docs/hooks.md): --config prints config; otherwise it records its pid in
// marks/starts, then runs body in a subshell for each request, with the
// run's variables exported. Started without the protocol, it fails.
func residentLoop(config, marks, body string) string {
	return `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
cat <<'CONFIG'
` + config + `
CONFIG
exit 0
fi
[[ ${HOOK_OPERATOR_RESIDENT:-} == 1 ]] || { echo "not resident" >&2; exit 1; }
echo $$ >> ` + marks + `/starts
while IFS= read -r line <&3; do
  [[ $line =~ \"id\":\"([0-9]+)\" ]] && id=${BASH_REMATCH[1]}
  for v in BINDING_CONTEXT_PATH KUBERNETES_PATCH_PATH METRICS_PATH VALIDATING_RESPONSE_PATH \
           ADMISSION_RESPONSE_PATH CONVERSION_RESPONSE_PATH; do
    [[ $line =~ \"$v\":\"([^\"]*)\" ]] && export "$v=${BASH_REMATCH[1]}"
  done
  code=0
  (
` + body + `
  ) || code=$?
  printf '{"id":"%s","exitCode":%d}\n' "$id" "$code" >&4
done
`
}

// startsIn is the pids a resident hook recorded in marks/starts, one per
// process started.
func startsIn(t *testing.T, marks string) []string {
	t.Helper()
	return markFields(marks, "starts")
}

// markFields is the words of the file marks/name, none if it is missing.
func markFields(marks, name string) []string {
	data, _ := os.ReadFile(filepath.Join(marks, name))
	return strings.Fields(string(data))
}

// recordedOn is the pids of the processes that ran the resident Go hook
// for the ConfigMap name, from its marks/records ("name pid" lines).
func recordedOn(marks, name string) (pids []string) {
	data, _ := os.ReadFile(filepath.Join(marks, "records"))
	for _, l := range strings.Split(string(data), "\n") {
		if n, pid, _ := strings.Cut(l, " "); n == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startResidentHook builds the resident Go hook (testdata/residenthook)
// into the harness's hooks folder as "resident", starts an operator with
// its marks folder and settings file (none when empty) and waits until it
// runs. The hook handles the ConfigMaps of the namespace labelled
// resident=yes; residentConfigMap makes one.
func startResidentHook(t *testing.T, h *harness, marks, settings string) (o *observed, hookPath string) {
	t.Helper()
	hookPath = filepath.Join(h.hooks, "resident")
	if out, err := gobuild.Command("", "-o", hookPath, "./testdata/residenthook").CombinedOutput(); err != nil {
		t.Fatalf("building the resident hook: %v\n%s", err, out)
	}
	env := []string{"RESIDENT_NS=" + h.ns, "RESIDENT_MARKS=" + marks}
	if settings != "" {
		env = append(env, "RESIDENT_SETTINGS="+settings)
	}
	o = h.startEnv(t, env)
	o.waitRunning(t)
	return o, hookPath
}

// residentConfigMap creates the ConfigMap name that the resident Go hook
// handles, in mode ("" for a plain run; block, hang, slow or leak).
func residentConfigMap(t *testing.T, h *harness, name, mode string) {
	t.Helper()
	h.configMap(t, name, map[string]string{"resident": "yes"}, map[string]string{"mode": mode})
}

// A resident Go hook (testdata/residenthook) under `start` on the local
// cluster: 500 events on one process; SIGKILL of the process mid-run → the
// run is retried on a new process; a hanging run times out and its process
// is replaced; a changed executable is restarted; SIGTERM of the operator
// lets the run in flight finish, then the process exits on EOF of fd 3.
func TestIntegrationResidentHook(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	o, hookPath := startResidentHook(t, h, marks, "")

	read := func(name string) []string { return markFields(marks, name) }
	recorded := func(name string) []string { return recordedOn(marks, name) }
	create := func(name, mode string) { residentConfigMap(t, h, name, mode) }

	const events = 500
	for i := range events {
		create(fmt.Sprintf("cm-%d", i), "")
	}
	records := func() int {
		data, _ := os.ReadFile(filepath.Join(marks, "records"))
		return len(strings.Split(strings.TrimSpace(string(data)), "\n"))
	}
	waitUntil(t, "500 events handled", func() bool { return records() >= events }, func() string { return strings.Join(read("starts"), " ") })
	if starts := read("starts"); len(starts) != 1 {
		t.Fatalf("%d events started the hook %d times (%v), want once", events, len(starts), starts)
	}
	first := read("starts")[0]

	// SIGKILL mid-run: the run fails, is retried on a new process.
	create("block", "block")
	o.waitFor(t, "the blocking run", func() bool { return len(read("blocked")) == 1 })
	if read("blocked")[0] != first {
		t.Errorf("the blocking run ran on %s, not the process that handled the events (%s)", read("blocked")[0], first)
	}
	must(t, killPid(first))
	o.waitFor(t, "the killed run retried", func() bool { return len(recorded("block")) == 1 })
	second := recorded("block")[0]
	if second == first || len(read("starts")) != 2 {
		t.Errorf("the retry ran on %s after %s was killed, starts %v; want a second process", second, first, read("starts"))
	}
	create("after-kill", "")
	o.waitFor(t, "the next event", func() bool { return len(recorded("after-kill")) == 1 })
	if got := recorded("after-kill")[0]; got != second {
		t.Errorf("the next event ran on %s, want the new process %s", got, second)
	}

	// A hanging run times out (settings.timeout 3s); its process is replaced.
	create("hang", "hang")
	o.waitFor(t, "the timed-out run retried", func() bool { return len(recorded("hang")) == 1 })
	third := recorded("hang")[0]
	if third == second || len(read("starts")) != 3 {
		t.Errorf("the retry of the hanging run ran on %s (hung on %s), starts %v; want a new process", third, second, read("starts"))
	}
	o.wantMetric(t, `hook_operator_hook_process_restarts_total{hook="resident",reason="timeout"}`, 1)
	o.wantMetric(t, `hook_operator_hook_process_restarts_total{hook="resident",reason="crashed"}`, 1)

	// A changed executable is restarted before its next run.
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(hookPath, later, later))
	create("changed", "")
	o.waitFor(t, "the run after the change", func() bool { return len(recorded("changed")) == 1 })
	fourth := recorded("changed")[0]
	if fourth == third || len(read("starts")) != 4 {
		t.Errorf("after the executable changed the run ran on %s (before: %s), starts %v; want a new process", fourth, third, read("starts"))
	}
	o.wantMetric(t, `hook_operator_hook_process_recycles_total{hook="resident",reason="changed"}`, 1)

	// SIGTERM while a run is in flight: it finishes, then the process sees
	// EOF on fd 3 and exits, and the operator exits 0.
	create("slow", "slow")
	o.waitFor(t, "the slow run", func() bool { return len(read("slow-started")) == 1 })
	if err := o.stop(t); err != nil {
		t.Errorf("the operator exited with %v after SIGTERM, want 0", err)
	}
	if done := read("slow-done"); len(done) != 1 || done[0] != fourth {
		t.Errorf("the run in flight did not finish on %s: slow-done %v", fourth, done)
	}
	if eof := read("eof"); !slices.Contains(eof, fourth) {
		t.Errorf("the process %s did not exit on EOF of fd 3 (eof: %v)", fourth, eof)
	}
}

// The resident Go hook's process is recycled after residentMaxRuns runs,
// by a reload that changes its configuration, and after a run that leaves
// its RSS above residentMaxMemory (it leaks 64 MiB); each time the next
// run starts a new process.
func TestIntegrationResidentRecycles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	settings := filepath.Join(t.TempDir(), "settings")
	must(t, os.WriteFile(settings, []byte(`,"residentMaxRuns":3`), 0o644))
	o, _ := startResidentHook(t, h, marks, settings)

	starts := func() []string { return startsIn(t, marks) }
	// handle creates a ConfigMap and waits for its run: one run each.
	handle := func(name, mode string) string {
		t.Helper()
		residentConfigMap(t, h, name, mode)
		o.waitFor(t, name+"'s run", func() bool { return len(recordedOn(marks, name)) > 0 })
		return recordedOn(marks, name)[0]
	}
	metric := func(reason string) float64 {
		return o.metric(t, `hook_operator_hook_process_recycles_total{hook="resident",reason="`+reason+`"}`)
	}

	// residentMaxRuns 3: runs 1-3 on the first process, run 4 on a new one.
	first := handle("r1", "")
	for _, name := range []string{"r2", "r3"} {
		if pid := handle(name, ""); pid != first {
			t.Errorf("%s ran on %s, want the first process %s", name, pid, first)
		}
	}
	second := handle("r4", "")
	if second == first || len(starts()) != 2 || metric("runs") != 1 {
		t.Errorf("after 3 runs: run 4 on %s (first %s), starts %v, recycles{runs} %v; want a new process", second, first, starts(), metric("runs"))
	}

	// A reload that changes the configuration recycles the process.
	must(t, os.WriteFile(settings, []byte(`,"residentMaxRuns":100,"residentMaxMemory":"48Mi"`), 0o644))
	must(t, os.WriteFile(filepath.Join(h.hooks, "README"), []byte("a change in the folder makes the operator reload it"), 0o644))
	o.waitFor(t, "the reload's recycle", func() bool { return metric("reload") == 1 })
	third := handle("after-reload", "")
	if third == second || len(starts()) != 3 {
		t.Errorf("after the reload: run on %s (before %s), starts %v; want a new process", third, second, starts())
	}

	// A run that leaves the process above residentMaxMemory recycles it.
	if pid := handle("leak", "leak"); pid != third {
		t.Errorf("the leaking run ran on %s, want %s", pid, third)
	}
	fourth := handle("after-leak", "")
	if fourth == third || len(starts()) != 4 || metric("memory") != 1 {
		t.Errorf("after the leak: run on %s (before %s), starts %v, recycles{memory} %v; want a new process", fourth, third, starts(), metric("memory"))
	}
}

// A resident validating hook (a bash loop speaking the protocol) answers
// the real API server's admission requests from one process: a denial
// with the hook's message, then allowed creates, all with one start.
func TestIntegrationResidentAdmission(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	configName := "hook-operator-test-" + ns
	marks := t.TempDir()
	w.hook(t, "validate.sh", residentLoop(`configVersion: v1
settings: {resident: true}
kubernetesValidating:
- name: values.resident-test.example.com
  timeoutSeconds: 10
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: `+ns+`}}}
  labelSelector: {matchLabels: {admission-test: "yes"}}`, marks, `if [[ $(jq -r '.[0].review.request.object.data.value // ""' "$BINDING_CONTEXT_PATH") == bad ]]; then
  echo '{"allowed": false, "message": "value bad is not allowed here"}' > "$VALIDATING_RESPONSE_PATH"
else
  echo '{"allowed": true}' > "$VALIDATING_RESPONSE_PATH"
fi`))
	deleteConfigurationsAtEnd(t, c, configName)
	o := w.startWebhooks(t, configName)
	o.waitLog(t, `"msg":"webhook configuration applied"`)

	cm := func(name, value string) string { return labelledConfigMap(ns, name, value) }
	w.waitDenied(t, o, cm("bad", "bad"), "value bad is not allowed here")
	for i := range 5 {
		if out, err := kubectlApply(c.Kubeconfig, cm(fmt.Sprintf("good-%d", i), "fine")); err != nil {
			t.Fatalf("an allowed create: %v\n%s", err, out)
		}
	}
	if starts := startsIn(t, marks); len(starts) != 1 {
		t.Errorf("the admission requests started the hook %d times (%v), want once", len(starts), starts)
	}
	o.wantMetric(t, `hook_operator_hook_process_starts_total{hook="validate.sh"}`, 1)
}

// start --dry-run runs a resident hook as start does, through its process:
// the run's operations are printed, and the cluster is left as it was.
func TestIntegrationResidentDryRun(t *testing.T) {
	t.Parallel()
	d := dryRunSetup(t)
	ns := d.ns
	marks := t.TempDir()
	must(t, os.Remove(filepath.Join(d.hooks, "change.sh")))
	writeHook(t, d.hooks, "change.sh", residentLoop(
		`{"configVersion":"v1","settings":{"resident":true},"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"executeHookOnEvent":[]}]}`,
		marks, `echo '{"operation":"MergePatch","kind":"ConfigMap","namespace":"`+ns+`","name":"cm","mergePatch":{"data":{"a":"2"}}}' >> "$KUBERNETES_PATCH_PATH"`))
	run := d.run(t, "client")
	if run.Hook != "change.sh" || run.Error != "" || len(run.Operations) != 1 {
		t.Errorf("run: hook %q error %q, %d operations; want change.sh's one patch", run.Hook, run.Error, len(run.Operations))
	}
	if ch, ok := change(run, "Updated", "ConfigMap "+ns+"/cm"); !ok || !strings.Contains(ch.Diff, `+  a: "2"`) {
		t.Errorf("no diff of cm's patch: %+v", run.Changes)
	}
	if starts := startsIn(t, marks); len(starts) != 1 {
		t.Errorf("the dry run started the resident hook %d times (%v), want once", len(starts), starts)
	}
}

// The API server's conversion requests are served by a resident hook's
// processes: an object stored as v1alpha1 is read as v1 again and again
// without a process start per request.
func TestIntegrationResidentConversion(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	group := ns + ".resident-conversion.example.com"
	crd := w.installCRD(t, group, "crontabs", "CronTab", "v1alpha1", "v1")

	marks := t.TempDir()
	w.hook(t, "convert.sh", residentLoop(`configVersion: v1
settings: {resident: true}
kubernetesCustomResourceConversion:
- name: alpha1_to_v1
  crdName: `+crd+`
  conversions:
  - {fromVersion: `+group+`/v1alpha1, toVersion: `+group+`/v1}`, marks,
		`jq '{convertedObjects: [.[0] as $c | $c.review.request.objects[] |
  if .apiVersion == $c.fromVersion then .apiVersion = $c.toVersion | .spec.schedule = (.spec.cron | join(" ")) | del(.spec.cron) else . end]}' \
  "$BINDING_CONTEXT_PATH" > "$CONVERSION_RESPONSE_PATH"`))
	o := w.startWebhooks(t, "resident-conversion-"+ns)
	o.waitLog(t, `"msg":"conversion webhook registered in the CRD"`)
	w.applyNightly(t, group)
	get := func() (string, error) {
		b, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "-n", ns, "get", "crontabs.v1."+group, "nightly",
			"-o", "jsonpath={.apiVersion} {.spec.schedule}").CombinedOutput()
		return string(b), err
	}
	want := group + "/v1 0 3 * * *"
	var got string
	var err error
	waitUntil(t, "the object read as v1", func() bool {
		got, err = get()
		return err == nil && got == want
	}, func() string { return got + "\n" + o.logs.String() })
	// The API server may send requests at once (one process each); later
	// reads, one at a time, reuse those processes.
	first := startsIn(t, marks)
	for i := range 5 {
		if got, err := get(); err != nil || got != want {
			t.Fatalf("read %d as v1: %q, %v; want %q", i, got, err, want)
		}
	}
	if starts := startsIn(t, marks); len(first) == 0 || len(starts) != len(first) {
		t.Errorf("5 reads one at a time started the hook %d more times (%v before, %v after), want none", len(starts)-len(first), first, starts)
	}
	// As many as the starts the hook counted.
	o.wantMetric(t, `hook_operator_hook_process_starts_total{hook="convert.sh"}`, float64(len(first)))
}

func killPid(pid string) error {
	var n int
	if _, err := fmt.Sscan(pid, &n); err != nil {
		return err
	}
	return syscall.Kill(n, syscall.SIGKILL)
}
