package rbac_test

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

// The chart's values hold what the hooks' objects need (bindings,
// finalizers, declared writes, conversion CRDs, Namespaces of a label
// selector), cluster-wide in rbac.extraRules and by namespace in
// rbac.namespaceRules, and none of what the chart grants by itself (Events,
// webhook configurations, the certificate Secret, Leases); webhook.enabled
// follows the admission and conversion bindings.
func TestChart(t *testing.T) {
	hooks := []*hook.Hook{
		parse(t, "a.sh", `
configVersion: v1
kubernetes:
- {name: pods, kind: Pod, namespace: {nameSelector: {matchNames: [shop]}}}
- {name: cms, kind: ConfigMap, finalizer: example.com/x, namespace: {labelSelector: {matchLabels: {team: x}}}}
writes:
- {kind: Secret, verbs: [get, update], namespaces: [shop]}
kubernetesValidating:
- name: policy.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
kubernetesCustomResourceConversion:
- {name: crontabs, crdName: crontabs.stable.example.com, conversions: [{fromVersion: v1beta1, toVersion: v1}]}
`),
	}
	grants := grantsOf(t, hooks, rbac.GrantOptions{
		WebhookConfigurationName: "my-hooks", WebhookConfigurationMode: "existing",
		WebhookCertSecret: "certs", OperatorNamespace: "ops", LeaseName: "lease", Sharding: true,
	})
	values := rbac.Chart(hooks, grants, rbac.ChartOptions{WebhookConfigurationMode: "managed", Sharding: true})
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	const want = `rbac:
  extraRules:
  - apiGroups:
    - ""
    resources:
    - configmaps
    verbs:
    - get
    - list
    - watch
    - update
  - apiGroups:
    - ""
    resources:
    - namespaces
    verbs:
    - get
    - list
    - watch
  - apiGroups:
    - apiextensions.k8s.io
    resources:
    - customresourcedefinitions
    verbs:
    - list
  - apiGroups:
    - apiextensions.k8s.io
    resourceNames:
    - crontabs.stable.example.com
    resources:
    - customresourcedefinitions
    verbs:
    - get
    - patch
  namespaceRules:
    shop:
    - apiGroups:
      - ""
      resources:
      - pods
      verbs:
      - get
      - list
      - watch
    - apiGroups:
      - ""
      resources:
      - secrets
      verbs:
      - get
      - update
sharding:
  enabled: true
webhook:
  configurationMode: managed
  enabled: true
`
	if string(data) != want {
		t.Errorf("values:\n%s\nwant:\n%s", data, want)
	}
}

// Hooks without admission or conversion bindings leave webhook out, so the
// chart's webhook.enabled (false) stands; no rules are empty lists, not
// null, which would remove the chart's keys.
func TestChartPlain(t *testing.T) {
	hooks := []*hook.Hook{parse(t, "plain.sh", "configVersion: v1\nonStartup: 1\n")}
	grants := grantsOf(t, hooks, rbac.GrantOptions{WebhookConfigurationName: "x"})
	data, err := yaml.Marshal(rbac.Chart(hooks, grants, rbac.ChartOptions{WebhookConfigurationName: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "rbac:\n  extraRules: []\n  namespaceRules: {}\n"; string(data) != want {
		t.Errorf("values:\n%s\nwant:\n%s", data, want)
	}
}
