package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// containerEnv returns the env values and volume names of the Deployment
// in objs.
func containerEnv(t *testing.T, objs []*unstructured.Unstructured) (env map[string]string, volumes map[string]map[string]any) {
	t.Helper()
	d := one(t, objs, "Deployment")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	env = map[string]string{}
	for _, e := range containers[0].(map[string]any)["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)], _ = e["value"].(string)
	}
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	volumes = map[string]map[string]any{}
	for _, v := range vols {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	return env, volumes
}

// webhook.clientCA mounts the CA (a ConfigMap or a Secret) and points
// --webhook-client-ca at it; both at once are refused; tlsMinVersion
// reaches the operator.
func TestHelmTemplateWebhookClientCA(t *testing.T) {
	env, volumes := containerEnv(t, objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=api-server-ca,webhook.tlsMinVersion=1.3")))
	if env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"] != "/client-ca/ca.crt" || env["HOOK_OPERATOR_WEBHOOK_TLS_MIN_VERSION"] != "1.3" {
		t.Errorf("env: %v", env)
	}
	if cm, _ := volumes["client-ca"]["configMap"].(map[string]any); cm["name"] != "api-server-ca" {
		t.Errorf("the client CA volume: %v", volumes["client-ca"])
	}
	env, volumes = containerEnv(t, objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.secret=api-server-ca,webhook.clientCA.key=root.pem")))
	if env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"] != "/client-ca/root.pem" {
		t.Errorf("env: %v", env)
	}
	if s, _ := volumes["client-ca"]["secret"].(map[string]any); s["secretName"] != "api-server-ca" {
		t.Errorf("the client CA volume: %v", volumes["client-ca"])
	}
	env, volumes = containerEnv(t, objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true")))
	if _, ok := env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"]; ok || volumes["client-ca"] != nil {
		t.Errorf("a client CA without clientCA: %v %v", env, volumes["client-ca"])
	}
	if out := helmTemplateFails(t, "--set", "webhook.enabled=true,webhook.clientCA.configMap=a,webhook.clientCA.secret=b"); !strings.Contains(out, "webhook.clientCA: give configMap or secret, not both") {
		t.Errorf("both a ConfigMap and a Secret: %s", out)
	}
}

// networkPolicy.enabled adds a NetworkPolicy on the operator's Pods: the
// webhook port from webhookFrom, the metrics port from metricsFrom only
// when given, nothing else. Off by default.
func TestHelmTemplateNetworkPolicy(t *testing.T) {
	if got := only(objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true")), "NetworkPolicy"); len(got) != 0 {
		t.Errorf("a NetworkPolicy by default: %v", names(got))
	}
	objs := objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,networkPolicy.enabled=true",
		"--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring"))
	var np networkingv1.NetworkPolicy
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	d := one(t, objs, "Deployment")
	podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s; the Pods have %v", k, v, podLabels)
		}
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 2 {
		t.Fatalf("the NetworkPolicy: %+v", np.Spec)
	}
	webhook, metrics := np.Spec.Ingress[0], np.Spec.Ingress[1]
	if *webhook.Ports[0].Port != intstr.FromString("webhook") || webhook.From[0].IPBlock == nil || webhook.From[0].IPBlock.CIDR != "10.0.0.0/24" {
		t.Errorf("the webhook rule: %+v", webhook)
	}
	if *metrics.Ports[0].Port != intstr.FromString("metrics") || metrics.From[0].NamespaceSelector.MatchLabels["team"] != "monitoring" {
		t.Errorf("the metrics rule: %+v", metrics)
	}
	// Without metricsFrom the metrics port has no rule (the node's probes
	// only); without webhookFrom the webhook port is open to all sources.
	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,networkPolicy.enabled=true"))
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 0 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromString("webhook") {
		t.Errorf("the NetworkPolicy without peers: %+v", np.Spec.Ingress)
	}
}

// The API server accepts the chart with the webhook, a client CA and the
// NetworkPolicy (server-side dry-run).
func TestIntegrationHelmSecurityServerDryRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	manifests := helmTemplate(t, ns, "--set", "webhook.enabled=true,webhook.clientCA.configMap=api-server-ca,webhook.tlsMinVersion=1.3,networkPolicy.enabled=true",
		"--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring")
	serverDryRun(t, c, manifests, len(objects(t, manifests)))
}

// The kustomize components webhook-client-ca and network-policy, with the
// webhook component: the client CA mounted and set, the NetworkPolicy on
// the Pods' labels, and the API server accepts the result.
func TestIntegrationKustomizeSecurityComponents(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n- " + base +
		"\ncomponents:\n- " + filepath.Join(base, "webhook") + "\n- " + filepath.Join(base, "webhook-client-ca") + "\n- " + filepath.Join(base, "network-policy") + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomize(t, overlay)
	env, volumes := containerEnv(t, objs)
	if env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"] != "/client-ca/ca.crt" {
		t.Errorf("env: %v", env)
	}
	if cm, _ := volumes["client-ca"]["configMap"].(map[string]any); cm["name"] != "hook-operator-webhook-client-ca" {
		t.Errorf("the client CA volume: %v", volumes["client-ca"])
	}
	var np networkingv1.NetworkPolicy
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	podLabels, _, _ := unstructured.NestedStringMap(one(t, objs, "Deployment").Object, "spec", "template", "metadata", "labels")
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s; the Pods have %v", k, v, podLabels)
		}
	}
	if np.Namespace != ns || len(np.Spec.Ingress) != 1 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromInt32(9680) {
		t.Errorf("the NetworkPolicy: %s %+v", np.Namespace, np.Spec)
	}
	serverDryRun(t, c, run(t, overlay, nil, "kubectl", "kustomize", overlay), len(objs))
}
