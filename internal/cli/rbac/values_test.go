package rbac

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// command runs `rbac ARGS` as the CLI would, returning stdout and stderr.
func command(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, stderr bytes.Buffer
	log := logrus.New()
	log.SetOutput(&stderr)
	cmd := New(&out, log)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	return out.String(), stderr.String(), err
}

// -o values prints the chart's values: the hooks' rules in
// rbac.extraRules and rbac.namespaceRules, none of the operator's own that
// the chart grants (Events, webhook configurations, the Lease),
// webhook.enabled for the admission binding, and the webhook settings only
// when given, so that the chart's defaults (existing mode, the release's
// name) stand otherwise. The flags the chart decides are warned about.
func TestRunValues(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "policy.sh", `{"configVersion":"v1","kubernetes":[{"name":"pods","kind":"Pod","namespace":{"nameSelector":{"matchNames":["shop"]}}}],`+
		`"kubernetesValidating":[{"name":"policy.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}],`+
		`"writes":[{"kind":"Secret","verbs":["create"]}]}`, "")
	out, stderr, err := command(t, "--hooks-dir", dir, "-o", "values", "--leader-elect", "--namespace", "ops")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		RBAC struct {
			ExtraRules     []rbacv1.PolicyRule            `json:"extraRules"`
			NamespaceRules map[string][]rbacv1.PolicyRule `json:"namespaceRules"`
		} `json:"rbac"`
		Webhook map[string]any `json:"webhook"`
	}
	if err := yaml.UnmarshalStrict([]byte(out), &values); err != nil {
		t.Fatalf("not values of rbac and webhook: %v\n%s", err, out)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}
	if got, _ := yaml.Marshal(values.RBAC.ExtraRules); string(got) != string(must(yaml.Marshal(want))) {
		t.Errorf("extraRules:\n%s\nwant the Secret write alone (Events and webhook configurations are the chart's):\n%s", got, must(yaml.Marshal(want)))
	}
	want = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
	if got, _ := yaml.Marshal(values.RBAC.NamespaceRules); string(got) != string(must(yaml.Marshal(map[string]any{"shop": want}))) {
		t.Errorf("namespaceRules:\n%s\nwant the Pods of shop", got)
	}
	if len(values.Webhook) != 1 || values.Webhook["enabled"] != true {
		t.Errorf("webhook %v, want enabled alone (the chart's mode and name stand)", values.Webhook)
	}
	for _, line := range []string{
		"#   policy.sh: binding pods: get, list, watch pods in shop\n",
		"# SENSITIVE: create on secrets: Secrets hold credentials;",
		"webhook.clientCA.configMap or .secret",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the header lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "leases") || strings.Contains(out, "webhookconfigurations") {
		t.Errorf("a grant the chart makes by itself is in the values:\n%s", out)
	}
	if !strings.Contains(stderr, "--namespace, --leader-elect: not used with -o values") {
		t.Errorf("stderr %q: want a warning naming --namespace and --leader-elect", stderr)
	}

	out, _, err = command(t, "--hooks-dir", dir, "-o", "values", "--webhook-configuration-mode", "managed", "--webhook-configuration-name", "mine", "--sharding")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nsharding:\n  enabled: true\nwebhook:\n  configurationMode: managed\n  configurationName: mine\n  enabled: true\n") {
		t.Errorf("given settings are not values:\n%s", out)
	}

	if _, _, err := command(t, "--hooks-dir", dir, "-o", "json"); err == nil || !strings.Contains(err.Error(), "-o json: use yaml") {
		t.Errorf("-o json: %v", err)
	}
	help, _, err := command(t, "--help")
	if err != nil || !strings.Contains(help, "-o, --output string") || !strings.Contains(help, "values (the Helm chart's values") {
		t.Errorf("--help does not list -o values (%v):\n%s", err, help)
	}
}

func must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}
