package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// helm returns the pinned helm binary, built by hack/tools/helm.sh into the
// per-user cache the first time (a few minutes), found there afterwards.
func helm(t *testing.T) string {
	t.Helper()
	return testcluster.ToolBinary(t, "helm.sh")
}

// chart returns the chart's folder.
func chart(t *testing.T) string {
	return filepath.Join(repoRoot(t), "deploy", "helm", "hook-operator")
}

// helmTemplate renders the chart as release hook-operator in namespace ns
// with the extra helm arguments.
func helmTemplate(t *testing.T, ns string, args ...string) []byte {
	t.Helper()
	return run(t, repoRoot(t), nil, helm(t), append([]string{"template", "hook-operator", chart(t), "--namespace", ns}, args...)...)
}

// helmTemplateFails renders with args and returns helm's error output,
// failing t if the rendering succeeds.
func helmTemplateFails(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", "hook-operator", chart(t)}, args...)...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("helm template %s: rendered, want an error", strings.Join(args, " "))
	}
	return string(out)
}

// exampleHooksArgs sets the hooks of deploy/hooks as the chart's inline hooks.
func exampleHooksArgs(t *testing.T) []string {
	var args []string
	for name := range exampleHooks(t) {
		args = append(args, "--set-file", "hooks.inline."+strings.ReplaceAll(name, ".", `\.`)+"="+filepath.Join(repoRoot(t), "deploy", "hooks", name))
	}
	return args
}

func TestHelmLint(t *testing.T) {
	run(t, repoRoot(t), nil, helm(t), "lint", "--strict", chart(t))
	run(t, repoRoot(t), nil, helm(t), append([]string{"lint", "--strict", chart(t)}, exampleHooksArgs(t)...)...)
}

// The default values: no hooks of one's own and no demonstrations, so the
// operator runs nothing until hooks are given; its ClusterRole holds only
// the operator's own needs (Events about failed runs, and the reviews of
// --metrics-secure, on by default); no CRDs.
func TestHelmTemplateDefaults(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops"))
	checkDeployment(t, objs, deployment{namespace: "ops"})
	if got := names(only(objs, "CustomResourceDefinition")); len(got) != 0 {
		t.Errorf("CRDs %v without examples.enabled", got)
	}
	var role rbacv1.ClusterRole
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	want := append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}, secureRules...)
	if !equalRules(role.Rules, want) {
		t.Errorf("ClusterRole rules %v, want the Events rule and the metrics reviews alone", role.Rules)
	}
}

// examples.enabled runs the image's demonstrations (/examples/hooks) with
// their CRDs (kept on uninstall) and the generated rules from values.yaml;
// with hooks of one's own as well it is refused.
func TestHelmTemplateExamples(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops", "--set", "examples.enabled=true"))
	if got, want := names(only(objs, "CustomResourceDefinition")), crdNames(t); !slices.Equal(got, want) {
		t.Errorf("CRDs %v, want those of deploy/crds %v", got, want)
	}
	for _, crd := range only(objs, "CustomResourceDefinition") {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not kept on uninstall: uninstalling would delete every object of its kind", crd.GetName())
		}
	}
	container, _ := operatorContainer(t, objs)
	args, _ := container["args"].([]any)
	if len(args) < 3 || args[2] != "/examples/hooks" {
		t.Errorf("args %v, want --hooks-dir /examples/hooks", args)
	}
	var values struct {
		Examples struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		} `json:"examples"`
	}
	data, err := os.ReadFile(filepath.Join(chart(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if len(values.Examples.Rules) == 0 {
		t.Fatal("values.yaml has no examples.rules: run make deploy")
	}
	var role rbacv1.ClusterRole
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	for _, want := range values.Examples.Rules {
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return equalRules([]rbacv1.PolicyRule{r}, []rbacv1.PolicyRule{want}) }) {
			t.Errorf("ClusterRole lacks the generated rule %v", want)
		}
	}
	out := helmTemplateFails(t, "--set", "examples.enabled=true", "--set", "hooks.configMap=mine")
	if !strings.Contains(out, "examples.enabled runs the image's demonstrations instead of your hooks") {
		t.Errorf("examples with hooks of one's own: %s", out)
	}
}

// Inline hooks become a ConfigMap mounted with execute mode at
// hooks.mountPath; hooks.configMap mounts an existing one.
func TestHelmTemplateHooks(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops", exampleHooksArgs(t)...))
	checkDeployment(t, objs, deployment{namespace: "ops", hooksConfigMap: "hook-operator-hooks", hooksMount: "/hooks/custom", rendered: true})
	d := one(t, objs, "Deployment")
	sum, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "checksum/hooks")
	if sum == "" {
		t.Error("no checksum/hooks annotation: changing a hook would not restart the operator")
	}

	objs = objects(t, helmTemplate(t, "ops", "--set", "hooks.configMap=my-hooks", "--set", "hooks.mountPath=/hooks"))
	checkDeployment(t, objs, deployment{namespace: "ops", hooksConfigMap: "my-hooks", hooksMount: "/hooks"})
	if len(only(objs, "ConfigMap")) != 0 {
		t.Error("a ConfigMap is rendered for hooks.configMap, which names an existing one")
	}

	out := helmTemplateFails(t, "--set", "hooks.configMap=x", "--set-string", `hooks.inline.a\.sh=#!/bin/sh`)
	if !strings.Contains(out, "either inline or configMap") {
		t.Errorf("both inline and configMap: %s", out)
	}
	out = helmTemplateFails(t, "--set-string", `hooks.inline.\.hidden=#!/bin/sh`)
	if !strings.Contains(out, "plain file name") {
		t.Errorf("a dot-file hook: %s", out)
	}
}

// The other values reach the objects; "*" in a rule is refused.
func TestHelmTemplateValues(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops",
		"--set", "image.repository=registry.example/ops/hook-operator,image.tag=v9.9.9",
		"--set", "crds.install=false,service.enabled=false,replicas=0",
		"--set", "logLevel=debug,listenAddress=:8080",
		"--set", "extraEnv[0].name=HOOK_OPERATOR_HOOK_TIMEOUT,extraEnv[0].value=5m",
		"--set", "rbac.extraRules[0].apiGroups[0]=,rbac.extraRules[0].resources[0]=secrets,rbac.extraRules[0].verbs[0]=get",
		"--set", "rbac.namespaceRules.team-a[0].apiGroups[0]=,rbac.namespaceRules.team-a[0].resources[0]=pods,rbac.namespaceRules.team-a[0].verbs[0]=list",
		"--set", "nodeSelector.pool=ops",
	))
	if n := len(only(objs, "CustomResourceDefinition")) + len(only(objs, "Service")); n != 0 {
		t.Errorf("crds.install=false, service.enabled=false: %d CRDs and Services rendered", n)
	}
	d := one(t, objs, "Deployment")
	s := func(path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(d.Object, path...)
		return v
	}
	containers := s("spec", "template", "spec", "containers").([]any)
	c := containers[0].(map[string]any)
	if c["image"] != "registry.example/ops/hook-operator:v9.9.9" {
		t.Errorf("image %v", c["image"])
	}
	if r := s("spec", "replicas"); fmt.Sprint(r) != "0" {
		t.Errorf("replicas %v, want 0", r)
	}
	env := map[string]string{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)], _ = e["value"].(string)
	}
	if env["HOOK_OPERATOR_LOG_LEVEL"] != "debug" || env["HOOK_OPERATOR_LISTEN_ADDRESS"] != ":8080" || env["HOOK_OPERATOR_HOOK_TIMEOUT"] != "5m" {
		t.Errorf("env %v", env)
	}
	if p := c["ports"].([]any)[0].(map[string]any)["containerPort"]; fmt.Sprint(p) != "8080" {
		t.Errorf("containerPort %v, want 8080 (listenAddress)", p)
	}
	if ns := s("spec", "template", "spec", "nodeSelector"); ns.(map[string]any)["pool"] != "ops" {
		t.Errorf("nodeSelector %v", ns)
	}
	var role rbacv1.ClusterRole
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, []string{"secrets"}) }) {
		t.Errorf("rbac.extraRules not in the ClusterRole: %v", role.Rules)
	}
	var teamRoles int
	for _, r := range only(objs, "Role") {
		if r.GetNamespace() == "team-a" {
			teamRoles++
		}
	}
	if teamRoles != 1 {
		t.Errorf("%d Roles in team-a, want the one of rbac.namespaceRules", teamRoles)
	}
	checkRBAC(t, objs, "hook-operator", "ops")

	out := helmTemplateFails(t, "--set", "rbac.extraRules[0].apiGroups[0]=,rbac.extraRules[0].resources[0]=*,rbac.extraRules[0].verbs[0]=get")
	if !strings.Contains(out, `grants "*"`) {
		t.Errorf(`a rule with "*": %s`, out)
	}
}

// sharding.enabled sets the operator's sharding and grants the ring's
// Leases beside the leader's; without leader election it is refused.
func TestHelmTemplateSharding(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops", "--set", "sharding.enabled=true,sharding.by=namespace"))
	_, env := operatorContainer(t, objs)
	if env["HOOK_OPERATOR_SHARDING"] != "true" || env["HOOK_OPERATOR_SHARD_BY"] != "namespace" || env["HOOK_OPERATOR_LEADER_ELECT"] != "true" {
		t.Errorf("env %v", env)
	}
	granted := false
	for _, r := range only(objs, "Role") {
		var role rbacv1.Role
		typed(t, r, &role)
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "leases") && len(rule.ResourceNames) == 0 && slices.Contains(rule.Verbs, "delete") && slices.Contains(rule.Verbs, "watch") {
				granted = true
			}
		}
	}
	if !granted {
		t.Error("sharding.enabled: no Role grants the ring's Leases")
	}
	out := helmTemplateFails(t, "--set", "sharding.enabled=true,leaderElection.enabled=false,replicas=1")
	if !strings.Contains(out, "sharding.enabled needs leaderElection.enabled") {
		t.Errorf("sharding without leader election: %s", out)
	}
}

// named returns the object of kind and name, failing t unless there is one.
func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range only(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, names(only(objs, kind)))
	return nil
}

// equalRules compares rule lists, an empty list and a missing one alike.
func equalRules(a, b []rbacv1.PolicyRule) bool {
	ja, _ := yaml.Marshal(a)
	jb, _ := yaml.Marshal(b)
	return string(ja) == string(jb)
}

// webhook.enabled adds the webhook listener, its Service (443 to the
// container's port), the operator's settings to register by that Service,
// and the certificate: self-signed (with a Role for its Secret only), or a
// mounted Secret at shell-operator's /validating-certs.
func TestHelmTemplateWebhook(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca",
		"--set", "webhook.annotations.cert-manager\\.io/inject-ca-from=ops/ca"))
	svc := webhookService(t, objs)
	_, env := operatorContainer(t, objs)
	for k, v := range map[string]string{
		"HOOK_OPERATOR_WEBHOOK_LISTEN_ADDRESS": ":9680", "HOOK_OPERATOR_WEBHOOK_SERVICE_NAME": svc.GetName(),
		"HOOK_OPERATOR_NAMESPACE": "ops", "HOOK_OPERATOR_WEBHOOK_SELF_SIGNED": "true",
		"HOOK_OPERATOR_WEBHOOK_CERT_SECRET": "hook-operator-webhook-certs", "HOOK_OPERATOR_WEBHOOK_ANNOTATIONS": "cert-manager.io/inject-ca-from=ops/ca",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	checkCertificateRole(t, objs, "ops")
	checkRBAC(t, objs, "hook-operator", "ops")

	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca,webhook.certificates=secret,webhook.secretName=my-tls"))
	d := one(t, objs, "Deployment")
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	found := false
	for _, v := range volumes {
		if s, ok := v.(map[string]any)["secret"].(map[string]any); ok && s["secretName"] == "my-tls" {
			found = true
		}
	}
	if !found {
		t.Errorf("webhook.certificates=secret: the Secret my-tls is not mounted: %v", volumes)
	}
	for _, r := range only(objs, "Role") {
		if strings.HasSuffix(r.GetName(), "-webhook-certs") {
			t.Errorf("a mounted Secret needs no Role for the self-signed one")
		}
	}
	if out := helmTemplateFails(t, "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca,webhook.certificates=secret"); !strings.Contains(out, "webhook.secretName") {
		t.Errorf("certificates=secret without secretName: %s", out)
	}

	// cert-manager issues the certificate into a Secret the Pod mounts.
	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca,webhook.certificates=certManager",
		"--set", "webhook.certManager.issuerRef.name=ca,webhook.certManager.issuerRef.kind=ClusterIssuer"))
	cert := one(t, objs, "Certificate")
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if !slices.Contains(dns, "hook-operator-webhook.ops.svc") || secretName != "hook-operator-webhook-tls" || issuer != "ca" {
		t.Errorf("the Certificate: dnsNames %v, secretName %q, issuer %q", dns, secretName, issuer)
	}
	d = one(t, objs, "Deployment")
	volumes, _, _ = unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	found = false
	for _, v := range volumes {
		if s, ok := v.(map[string]any)["secret"].(map[string]any); ok && s["secretName"] == "hook-operator-webhook-tls" {
			found = true
		}
	}
	if !found {
		t.Errorf("certificates=certManager: the issued Secret is not mounted: %v", volumes)
	}
	if out := helmTemplateFails(t, "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca,webhook.certificates=certManager"); !strings.Contains(out, "webhook.certManager.issuerRef") {
		t.Errorf("certificates=certManager without an issuer: %s", out)
	}

	// The webhook configurations: by default the chart makes them (with no
	// webhooks field) and the operator may only get and patch them by name;
	// managed, it creates them, by name where the API allows.
	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca",
		"--set", "webhook.annotations.cert-manager\\.io/inject-ca-from=ops/ca"))
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		c := named(t, objs, kind, "hook-operator")
		if _, found := c.Object["webhooks"]; found {
			t.Errorf("the chart's %s sets webhooks, which an upgrade would then empty", kind)
		}
		if c.GetAnnotations()["cert-manager.io/inject-ca-from"] != "ops/ca" {
			t.Errorf("the chart's %s lacks webhook.annotations: %v", kind, c.GetAnnotations())
		}
	}
	env, _ = containerEnv(t, objs)
	if env["HOOK_OPERATOR_WEBHOOK_CONFIGURATION_MODE"] != "existing" {
		t.Errorf("HOOK_OPERATOR_WEBHOOK_CONFIGURATION_MODE=%q, want existing", env["HOOK_OPERATOR_WEBHOOK_CONFIGURATION_MODE"])
	}
	var role rbacv1.ClusterRole
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "admissionregistration.k8s.io") &&
			(!slices.Equal(r.Verbs, []string{"get", "patch"}) || !slices.Equal(r.ResourceNames, []string{"hook-operator"})) {
			t.Errorf("existing mode grants %+v on webhook configurations, want get and patch on hook-operator only", r)
		}
	}
	checkRBAC(t, objs, "hook-operator", "ops")

	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca,webhook.configurationMode=managed"))
	if n := len(only(objs, "ValidatingWebhookConfiguration")) + len(only(objs, "MutatingWebhookConfiguration")); n != 0 {
		t.Errorf("managed mode: the chart makes %d webhook configurations", n)
	}
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	n := len(role.Rules)
	var hooksRules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "admissionregistration.k8s.io") {
			hooksRules = append(hooksRules, r)
		}
	}
	if len(hooksRules) != 2 || !slices.Equal(hooksRules[0].Verbs, []string{"create"}) ||
		!slices.Equal(hooksRules[1].ResourceNames, []string{"hook-operator", "hook-operator-dry-run"}) {
		t.Errorf("managed mode: the ClusterRole's rules for the webhook configurations: %+v (of %d)", hooksRules, n)
	}
	checkRBAC(t, objs, "hook-operator", "ops")
}

// values.schema.json refuses values the chart would otherwise ignore or
// render wrong: a misspelt key, a value of the wrong type, a word outside a
// key's choices; helm names the key in its error.
func TestHelmValuesSchema(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"misspelt key", []string{"--set", "replica=3"}, "additional properties 'replica' not allowed"},
		{"misspelt nested key", []string{"--set", "webhook.enable=true"}, "additional properties 'enable' not allowed"},
		{"wrong type", []string{"--set-string", "replicas=two"}, "/replicas': got string, want integer"},
		{"not a choice", []string{"--set", "logLevel=verbose"}, "/logLevel': value must be one of"},
		{"relative mount path", []string{"--set", "hooks.mountPath=hooks"}, "/hooks/mountPath': 'hooks' does not match pattern"},
		{"misspelt monitoring key", []string{"--set", "monitoring.serviceMonitor.enable=true"}, "additional properties 'enable' not allowed"},
		{"secure metrics port", []string{"--set-string", "metrics.secure.port=https"}, "/metrics/secure/port': got string, want integer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if out := helmTemplateFails(t, c.args...); !strings.Contains(out, c.want) {
				t.Errorf("helm template %v: error\n%s\nwant it to contain %q", c.args, out, c.want)
			}
			cmd := exec.Command(helm(t), append([]string{"lint", "--strict", chart(t)}, c.args...)...)
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("helm lint --strict %v: passed, want it refused\n%s", c.args, out)
			}
		})
	}
}
