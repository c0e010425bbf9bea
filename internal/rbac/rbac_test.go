package rbac_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

func parse(t *testing.T, name, config string) *hook.Hook {
	t.Helper()
	cfg, err := hook.ParseConfig(name, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	return &hook.Hook{Name: name, Config: cfg}
}

// grantsOf derives the grants of hooks with opts, resolving kinds from
// the built-in resources.
func grantsOf(t *testing.T, hooks []*hook.Hook, opts rbac.GrantOptions) []rbac.Grant {
	t.Helper()
	grants, err := rbac.Grants(hooks, kube.NewStaticResolver(kube.BuiltinResources()), opts)
	if err != nil {
		t.Fatal(err)
	}
	return grants
}

// objectsYAML is the YAML of the RBAC objects of grants, named op, in
// namespace ops, bound to ServiceAccount sa: each document after "---".
func objectsYAML(t *testing.T, grants []rbac.Grant) string {
	t.Helper()
	var out strings.Builder
	for _, obj := range rbac.Objects(grants, rbac.Options{Name: "op", Namespace: "ops", ServiceAccount: "sa"}) {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n" + string(data))
	}
	return out.String()
}

func TestGrantsAndObjects(t *testing.T) {
	hooks := []*hook.Hook{
		parse(t, "a.sh", `
configVersion: v1
kubernetes:
- {name: pods, kind: Pod, namespace: {nameSelector: {matchNames: [shop, web]}}}
- {name: deploys, kind: deploy, finalizer: example.com/x}
writes:
- {kind: Deployment, verbs: [patch, create]}
- {kind: Deployment, subresource: scale, verbs: [update]}
- {kind: ConfigMap, verbs: [create], namespaces: [shop]}
`),
		parse(t, "b.sh", `
configVersion: v1
kubernetes:
- {name: cms, kind: ConfigMap, namespace: {labelSelector: {matchLabels: {team: x}}}}
- {name: nodes, kind: Node, namespace: {nameSelector: {matchNames: [shop]}}}
`),
	}
	got := objectsYAML(t, grantsOf(t, hooks, rbac.GrantOptions{}))
	for _, want := range []string{
		// The cluster-wide rules, merged and sorted.
		"kind: ClusterRole\nmetadata:\n  name: op\nrules:\n" +
			"- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  - namespaces\n  - nodes\n  verbs:\n  - get\n  - list\n  - watch\n" +
			"- apiGroups:\n  - \"\"\n  resources:\n  - events\n  verbs:\n  - create\n  - patch\n" +
			"- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - get\n  - list\n  - watch\n  - create\n  - update\n  - patch\n" +
			"- apiGroups:\n  - apps\n  resources:\n  - deployments/scale\n  verbs:\n  - update\n",
		// Pods only in the two namespaces; the ConfigMap write in shop.
		"kind: Role\nmetadata:\n  name: op\n  namespace: shop\nrules:\n" +
			"- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - create\n" +
			"- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - get\n  - list\n  - watch\n",
		"kind: Role\nmetadata:\n  name: op\n  namespace: web\n",
		"subjects:\n- kind: ServiceAccount\n  name: sa\n  namespace: ops\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks:\n%s\n--- in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "*") {
		t.Errorf("a rule uses *:\n%s", got)
	}
}

func TestUnknownKind(t *testing.T) {
	hooks := []*hook.Hook{parse(t, "w.sh", "configVersion: v1\nkubernetes: [{kind: Widget}]\n")}
	_, err := rbac.Grants(hooks, kube.NewStaticResolver(kube.BuiltinResources()), rbac.GrantOptions{})
	if err == nil || !strings.Contains(err.Error(), "w.sh") || !strings.Contains(err.Error(), "--crds") {
		t.Errorf("err %v", err)
	}
}

// Admission bindings need to register the webhooks, and only of the kinds
// they use: a folder with only validating bindings gets nothing on
// MutatingWebhookConfigurations (issue 43: its ServiceAccount created an
// arbitrary one). In managed mode: create (which cannot be limited to a
// name, and is flagged) and get, patch, delete of start's
// --webhook-configuration-name only; in existing mode get and patch of
// that name, no create, no delete.
func TestGrantsForAdmission(t *testing.T) {
	validating := parse(t, "policy.sh", `
configVersion: v1
kubernetesValidating:
- name: policy.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
`)
	mutating := parse(t, "defaults.sh", `
configVersion: v1
kubernetesMutating:
- name: defaults.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
`)
	rules := func(hooks []*hook.Hook, opts rbac.GrantOptions) ([]rbac.Grant, string) {
		t.Helper()
		grants := grantsOf(t, hooks, opts)
		return grants, objectsYAML(t, grants)
	}
	const group = "- apiGroups:\n  - admissionregistration.k8s.io\n"

	grants, out := rules([]*hook.Hook{validating}, rbac.GrantOptions{WebhookConfigurationName: "my-hooks"})
	want := group + "  resources:\n  - validatingwebhookconfigurations\n  verbs:\n  - create\n" +
		group + "  resourceNames:\n  - my-hooks\n  resources:\n  - validatingwebhookconfigurations\n  verbs:\n  - get\n  - patch\n  - delete\n"
	if !strings.Contains(out, want) {
		t.Errorf("validating only: the rules lack\n%s\ngot:\n%s", want, out)
	}
	if strings.Contains(out, "mutatingwebhookconfigurations") {
		t.Errorf("validating only: a grant on MutatingWebhookConfigurations:\n%s", out)
	}
	var flagged []string
	for _, g := range grants {
		if why := rbac.Sensitive(g); why != "" {
			flagged = append(flagged, why)
		}
	}
	if len(flagged) != 2 || !strings.HasPrefix(flagged[0], "create on validatingwebhookconfigurations:") || !strings.Contains(flagged[0], "any name") ||
		!strings.HasPrefix(flagged[1], "patch, delete on validatingwebhookconfigurations:") {
		t.Errorf("sensitive: %q, want the create (any name) and the patch, delete flagged", flagged)
	}

	_, out = rules([]*hook.Hook{mutating}, rbac.GrantOptions{})
	if !strings.Contains(out, "- mutatingwebhookconfigurations\n") || strings.Contains(out, "validatingwebhookconfigurations") ||
		!strings.Contains(out, "  - shell-operator-hooks\n") {
		t.Errorf("mutating only, default name:\n%s", out)
	}

	grants, out = rules([]*hook.Hook{validating, mutating}, rbac.GrantOptions{WebhookConfigurationName: "my-hooks", WebhookConfigurationMode: "existing"})
	want = group + "  resourceNames:\n  - my-hooks\n  resources:\n  - mutatingwebhookconfigurations\n  - validatingwebhookconfigurations\n  verbs:\n  - get\n  - patch\n"
	if !strings.Contains(out, want) {
		t.Errorf("existing mode: the rules lack\n%s\ngot:\n%s", want, out)
	}
	for _, g := range grants {
		if strings.Contains(g.Resource, "webhookconfigurations") && (len(g.ResourceNames) == 0 || slices.Contains(g.Verbs, "create") || slices.Contains(g.Verbs, "delete")) {
			t.Errorf("existing mode: %+v", g)
		}
	}

	none, _ := rules([]*hook.Hook{parse(t, "plain.sh", "configVersion: v1\nonStartup: 1\n")}, rbac.GrantOptions{})
	for _, g := range none {
		if strings.Contains(g.Resource, "webhookconfigurations") {
			t.Errorf("a hook without admission bindings got %+v", g)
		}
	}
}

func TestGrantsForConversion(t *testing.T) {
	hooks := []*hook.Hook{parse(t, "convert.sh", `
configVersion: v1
kubernetesCustomResourceConversion:
- name: crontabs
  crdName: crontabs.stable.example.com
  conversions: [{fromVersion: v1beta1, toVersion: v1}]
- name: widgets
  crdName: widgets.stable.example.com
  conversions: [{fromVersion: v1beta1, toVersion: v1}]
`)}
	grants := grantsOf(t, hooks, rbac.GrantOptions{})
	var named, listed bool
	for _, g := range grants {
		if g.Resource != "customresourcedefinitions" {
			continue
		}
		switch {
		case strings.Join(g.Verbs, ",") == "get,patch" && strings.Join(g.ResourceNames, ",") == "crontabs.stable.example.com,widgets.stable.example.com":
			named = true
		case strings.Join(g.Verbs, ",") == "list" && len(g.ResourceNames) == 0:
			listed = true
		default:
			t.Errorf("an unexpected grant on CRDs: %+v", g)
		}
	}
	if !named || !listed {
		t.Errorf("want get and patch of the two CRDs by name, and list; got %+v", grants)
	}
}

func TestGrantsForLeaderElection(t *testing.T) {
	hooks := []*hook.Hook{parse(t, "plain.sh", "configVersion: v1\nonStartup: 1\n")}
	grants := grantsOf(t, hooks, rbac.GrantOptions{LeaseName: "op-lease", OperatorNamespace: "ops"})
	var got []string
	for _, g := range grants {
		if g.Resource == "leases" {
			got = append(got, g.Group+":"+g.Namespace+":"+strings.Join(g.Verbs, ",")+":"+strings.Join(g.ResourceNames, ","))
		}
	}
	if want := "coordination.k8s.io:ops:create: coordination.k8s.io:ops:get,list,watch,update:op-lease"; strings.Join(got, " ") != want {
		t.Errorf("Lease grants = %v, want %s", got, want)
	}
}
