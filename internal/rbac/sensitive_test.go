package rbac_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

func TestSensitive(t *testing.T) {
	for _, c := range []struct {
		g    rbac.Grant
		want string // in the reason; "" for none
	}{
		{rbac.Grant{Resource: "secrets", Verbs: []string{"create", "patch"}}, "create, patch on secrets: Secrets hold credentials"},
		{rbac.Grant{Resource: "secrets", Verbs: []string{"get", "create"}}, "create on secrets: Secrets hold credentials; create reaches any name"},
		{rbac.Grant{Resource: "secrets", Verbs: []string{"get", "list", "watch"}}, ""},
		{rbac.Grant{Resource: "namespaces", Verbs: []string{"create"}}, "create on namespaces"},
		{rbac.Grant{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verbs: []string{"create"}}, "create on validatingwebhookconfigurations"},
		{rbac.Grant{Group: "rbac.authorization.k8s.io", Resource: "roles", Verbs: []string{"create"}}, "create on roles: RBAC objects can grant"},
		{rbac.Grant{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verbs: []string{"patch"}}, "patch on rolebindings"},
		{rbac.Grant{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verbs: []string{"bind", "escalate"}}, "bind, escalate on clusterroles"},
		{rbac.Grant{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"create"}}, ""},
		{rbac.Grant{Resource: "events", Verbs: []string{"create", "patch"}}, ""},
		{rbac.Grant{Resource: "namespaces", Verbs: []string{"delete"}}, "delete on namespaces"},
		{rbac.Grant{Resource: "namespaces/finalize", Verbs: []string{"update"}}, "update on namespaces/finalize"},
		{rbac.Grant{Resource: "nodes", Verbs: []string{"patch"}}, "Nodes"},
		{rbac.Grant{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Verbs: []string{"get", "patch", "delete"}}, "patch, delete on mutatingwebhookconfigurations"},
		{rbac.Grant{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Verbs: []string{"update"}}, "escalation"},
		{rbac.Grant{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verbs: []string{"patch"}}, "CRD"},
		{rbac.Grant{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verbs: []string{"list"}}, ""},
		{rbac.Grant{Resource: "configmaps", Verbs: []string{"patch", "delete"}}, ""},
		{rbac.Grant{Group: "apps", Resource: "*", Verbs: []string{"get"}}, `"*"`},
		{rbac.Grant{Resource: "pods", Verbs: []string{"*"}}, `"*"`},
	} {
		got := rbac.Sensitive(c.g)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Sensitive(%+v) = %q, want %q", c.g, got, c.want)
		}
	}
}

// A hook that writes (by its file or its bindings) without declaring
// writes is named with what gives it away; one that declares writes, or
// shows no write, is not.
func TestUndeclaredWrites(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	writer := parse(t, "writer.sh", "configVersion: v1\nschedule: [{crontab: '* * * * *'}]\n")
	writer.Path = file("writer.sh", "#!/bin/bash\nsource lib/hook.sh\nhook::merge_patch ConfigMap ns c '{}'\n")
	raw := parse(t, "raw.sh", "configVersion: v1\nschedule: [{crontab: '* * * * *'}]\n")
	raw.Path = file("raw.sh", "#!/bin/bash\necho '{\"operation\": \"Delete\"}' >\"$KUBERNETES_PATCH_PATH\"\n")
	status := parse(t, "status.sh", "configVersion: v1\nkubernetes: [{name: cms, kind: ConfigMap, executeHookOnOwnStatusChange: true}]\n")
	status.Path = file("status.sh", "#!/bin/bash\n")
	declared := parse(t, "declared.sh", "configVersion: v1\nschedule: [{crontab: '* * * * *'}]\nwrites: [{kind: ConfigMap, verbs: [patch]}]\n")
	declared.Path = file("declared.sh", "#!/bin/bash\nhook::merge_patch ConfigMap ns c '{}'\n")
	reader := parse(t, "reader.sh", "configVersion: v1\nschedule: [{crontab: '* * * * *'}]\n")
	reader.Path = file("reader.sh", "#!/bin/bash\n# Try it: kubectl create configmap demo; hook::apply is not used\njq . \"$BINDING_CONTEXT_PATH\"\n")

	got := rbac.UndeclaredWrites([]*hook.Hook{writer, raw, status, declared, reader})
	want := []string{writer.Path + ": the hook's file uses hook::merge_patch", raw.Path + ": the hook's file uses KUBERNETES_PATCH_PATH",
		status.Path + `: its binding "cms" sets executeHookOnOwnStatusChange`}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || !strings.Contains(got[i], `declares no "writes"`) {
			t.Errorf("warning %q, want it to start with %q and say no writes are declared", got[i], w)
		}
	}
}
