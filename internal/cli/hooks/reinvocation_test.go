package hooks_test

import (
	"strings"
	"testing"
)

// -o wide shows a mutating binding's reinvocationPolicy when it is not the
// API server's default (Never); the narrow table has no DETAILS. -o json
// keeps it with the binding's other webhook settings.
func TestListReinvocationPolicy(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "defaults.sh", `cat <<'YAML'
configVersion: v1
kubernetesMutating:
- name: again.example.com
  reinvocationPolicy: IfNeeded
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
- name: once.example.com
  reinvocationPolicy: Never
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
- name: unset.example.com
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
YAML
`)
	code, out, stderr := run(nil, "hooks", "list", "--hooks-dir", dir, "-o", "wide")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := [][]string{
		{"HOOK", "MODE", "BINDING TYPE", "NAME", "KIND/CRONTAB", "QUEUE", "DETAILS"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "again.example.com", "-", "-", "path=/hooks/again-example-com; reinvocationPolicy=IfNeeded"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "once.example.com", "-", "-", "path=/hooks/once-example-com"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "unset.example.com", "-", "-", "path=/hooks/unset-example-com"},
	}
	wantRows(t, "-o wide", out, want)

	code, out, stderr = run(nil, "hooks", "list", "--hooks-dir", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"reinvocationPolicy": "IfNeeded"`) {
		t.Errorf("-o json lacks the binding's reinvocationPolicy:\n%s", out)
	}
}

// A reinvocationPolicy the API server would refuse fails hooks list with
// the hook, the field and the values allowed.
func TestListReinvocationPolicyInvalid(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "defaults.sh", `echo '{"configVersion":"v1","kubernetesMutating":[{"name":"a.example.com","reinvocationPolicy":"ifneeded"}]}'`)
	code, out, stderr := run(nil, "hooks", "list", "--hooks-dir", dir, "-o", "wide")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	want := `hook defaults.sh: kubernetesMutating[0].reinvocationPolicy: binding "a.example.com": "ifneeded" is not a reinvocation policy`
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "use Never (") || !strings.Contains(stderr, ") or IfNeeded (") {
		t.Errorf("stderr %q\nwant %q and the values allowed", stderr, want)
	}
}
