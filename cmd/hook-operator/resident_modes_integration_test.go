package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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

func startsIn(t *testing.T, marks string) []string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(marks, "starts"))
	return strings.Fields(string(data))
}

// start --dry-run runs a resident hook as start does, through its process:
// the run's operations are printed, and the cluster is left as it was.
func TestIntegrationResidentDryRun(t *testing.T) {
	t.Parallel()
	c, ns, hooksDir, crd := dryRunSetup(t)
	marks := t.TempDir()
	must(t, os.Remove(filepath.Join(hooksDir, "change.sh")))
	writeHook(t, hooksDir, "change.sh", residentLoop(
		`{"configVersion":"v1","settings":{"resident":true},"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"executeHookOnEvent":[]}]}`,
		marks, `echo '{"operation":"MergePatch","kind":"ConfigMap","namespace":"`+ns+`","name":"cm","mergePatch":{"data":{"a":"2"}}}' >> "$KUBERNETES_PATCH_PATH"`))
	before := resourceVersions(t, c, ns)
	run := firstRun(t, c.Kubeconfig, hooksDir, "client")
	assertUnchanged(t, c, ns, crd, before)
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
	w.apply(t, fmt.Sprintf(`apiVersion: %s/v1alpha1
kind: CronTab
metadata: {name: nightly, namespace: %s}
spec: {cron: ["0", "3", "*", "*", "*"]}
`, group, ns))
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
	if n := o.metric(t, `hook_operator_hook_process_starts_total{hook="convert.sh"}`); n != float64(len(first)) {
		t.Errorf("hook_process_starts_total = %v, want the %d starts the hook counted", n, len(first))
	}
}
