package deploy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// containerEnv returns the env values and volume names of the Deployment
// in objs.
func containerEnv(t *testing.T, objs []*unstructured.Unstructured) (env map[string]string, volumes map[string]map[string]any) {
	t.Helper()
	_, env = operatorContainer(t, objs)
	vols, _, _ := unstructured.NestedSlice(one(t, objs, "Deployment").Object, "spec", "template", "spec", "volumes")
	volumes = map[string]map[string]any{}
	for _, v := range vols {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	return env, volumes
}

// webhook.clientCA mounts the CA (a ConfigMap or a Secret) and points
// --webhook-client-ca at it; it is on by default, so the webhook without a
// CA named is refused unless turned off explicitly; both at once are
// refused; tlsMinVersion reaches the operator.
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
	// On by default: the webhook without a CA is refused, saying how to
	// give one or turn it off.
	out := helmTemplateFails(t, "--set", "webhook.enabled=true")
	for _, want := range []string{"webhook.clientCA.configMap", "webhook.clientCA.secret", "webhook.clientCA.enabled=false"} {
		if !strings.Contains(out, want) {
			t.Errorf("the webhook without a client CA: the error lacks %q: %s", want, out)
		}
	}
	env, volumes = containerEnv(t, objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.enabled=false")))
	if _, ok := env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"]; ok || volumes["client-ca"] != nil {
		t.Errorf("a client CA with webhook.clientCA.enabled=false: %v %v", env, volumes["client-ca"])
	}
	// Without the webhook, nothing is asked.
	env, volumes = containerEnv(t, objects(t, helmTemplate(t, "ops")))
	if _, ok := env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"]; ok || volumes["client-ca"] != nil {
		t.Errorf("a client CA without the webhook: %v %v", env, volumes["client-ca"])
	}
	if out := helmTemplateFails(t, "--set", "webhook.enabled=true,webhook.clientCA.configMap=a,webhook.clientCA.secret=b"); !strings.Contains(out, "webhook.clientCA: give configMap or secret, not both") {
		t.Errorf("both a ConfigMap and a Secret: %s", out)
	}
	if out := helmTemplateFails(t, "--set", "webhook.enabled=true,webhook.clientCA.enabled=false,webhook.clientCA.configMap=a"); !strings.Contains(out, "drop one of them") {
		t.Errorf("a CA named with the client CA off: %s", out)
	}
}

// The NetworkPolicy is on by default (checkDeployment checks it): the
// webhook port from webhookFrom, the metrics ports from metricsFrom (by
// default the namespace monitoring), the probe port from healthFrom;
// nothing else. networkPolicy.enabled=false drops it.
func TestHelmTemplateNetworkPolicy(t *testing.T) {
	objs := objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca"))
	var d appsv1.Deployment
	typed(t, one(t, objs, "Deployment"), &d)
	checkNetworkPolicy(t, objs, d)
	var np networkingv1.NetworkPolicy
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if len(np.Spec.Ingress) != 3 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromString("webhook") {
		t.Errorf("the default NetworkPolicy with the webhook: %+v", np.Spec.Ingress)
	}

	objs = objects(t, helmTemplate(t, "ops", "--set", "webhook.enabled=true,webhook.clientCA.configMap=ca",
		"--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=observability",
		"--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
		"--set", "networkPolicy.healthFrom[0].ipBlock.cidr=192.168.0.0/16"))
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 3 {
		t.Fatalf("the NetworkPolicy: %+v", np.Spec)
	}
	webhook, metrics, health := np.Spec.Ingress[0], np.Spec.Ingress[1], np.Spec.Ingress[2]
	if *webhook.Ports[0].Port != intstr.FromString("webhook") || webhook.From[0].IPBlock == nil || webhook.From[0].IPBlock.CIDR != "10.0.0.0/24" {
		t.Errorf("the webhook rule: %+v", webhook)
	}
	if len(metrics.Ports) != 2 || *metrics.Ports[0].Port != intstr.FromString("metrics") || *metrics.Ports[1].Port != intstr.FromString("https-metrics") ||
		len(metrics.From) != 1 || !reflect.DeepEqual(metrics.From[0].NamespaceSelector.MatchLabels, map[string]string{"team": "observability"}) ||
		metrics.From[0].PodSelector.MatchLabels["app"] != "prometheus" {
		t.Errorf("the metrics rule: %+v", metrics)
	}
	if *health.Ports[0].Port != intstr.FromString("health") || health.From[0].IPBlock.CIDR != "192.168.0.0/16" {
		t.Errorf("the health rule: %+v", health)
	}

	// No peers: the metrics ports closed; without the webhook, no webhook
	// rule; without secure metrics, the plain port.
	objs = objects(t, helmTemplate(t, "ops", "--set", "networkPolicy.metricsFrom=null,metrics.secure.enabled=false"))
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 0 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromString("health") {
		t.Errorf("the NetworkPolicy without metrics peers: %+v", np.Spec.Ingress)
	}
	objs = objects(t, helmTemplate(t, "ops", "--set", "metrics.secure.enabled=false"))
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[0].Ports) != 1 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromString("metrics") {
		t.Errorf("the NetworkPolicy with plain metrics: %+v", np.Spec.Ingress)
	}

	if got := only(objects(t, helmTemplate(t, "ops", "--set", "networkPolicy.enabled=false")), "NetworkPolicy"); len(got) != 0 {
		t.Errorf("a NetworkPolicy with networkPolicy.enabled=false: %v", names(got))
	}
}

// The API server accepts the chart with the webhook, a client CA and the
// NetworkPolicy's peers (server-side dry-run).
func TestIntegrationHelmSecurityServerDryRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	manifests := helmTemplate(t, ns, "--set", "webhook.enabled=true,webhook.clientCA.configMap=api-server-ca,webhook.tlsMinVersion=1.3",
		"--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24",
		"--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
		"--set", "networkPolicy.healthFrom[0].ipBlock.cidr=192.168.0.0/16")
	serverDryRun(t, c, manifests, len(objects(t, manifests)))
}

// The webhook component brings the client CA (its component
// webhook-client-ca): mounted and set, and the API server accepts the
// result with deploy/'s NetworkPolicy; webhook-no-client-ca after it turns
// the CA off, and the API server accepts that too.
func TestIntegrationKustomizeSecurityComponents(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	render := func(components ...string) (string, []*unstructured.Unstructured) {
		t.Helper()
		overlay := t.TempDir()
		base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
		if err != nil {
			t.Fatal(err)
		}
		kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n- " + base + "\ncomponents:\n"
		for _, c := range components {
			kustomization += "- " + filepath.Join(base, c) + "\n"
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		return overlay, kustomize(t, overlay)
	}
	overlay, objs := render("webhook")
	env, volumes := containerEnv(t, objs)
	if env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"] != "/client-ca/ca.crt" {
		t.Errorf("env: %v", env)
	}
	if cm, _ := volumes["client-ca"]["configMap"].(map[string]any); cm["name"] != "hook-operator-webhook-client-ca" {
		t.Errorf("the client CA volume: %v", volumes["client-ca"])
	}
	var d appsv1.Deployment
	typed(t, one(t, objs, "Deployment"), &d)
	checkNetworkPolicy(t, objs, d)
	serverDryRun(t, c, run(t, overlay, nil, "kubectl", "kustomize", overlay), len(objs))

	overlay, objs = render("webhook", "webhook-no-client-ca")
	env, volumes = containerEnv(t, objs)
	if _, ok := env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"]; ok || volumes["client-ca"] != nil {
		t.Errorf("webhook-no-client-ca left the client CA: %v %v", env, volumes["client-ca"])
	}
	if env["HOOK_OPERATOR_WEBHOOK_SELF_SIGNED"] != "true" {
		t.Errorf("webhook-no-client-ca dropped the webhook's settings: %v", env)
	}
	serverDryRun(t, c, run(t, overlay, nil, "kubectl", "kustomize", overlay), len(objs))
}

// webhook-no-client-ca removes exactly what the client CA adds: the
// setting, the mount and the volume (a unit test of the kustomize
// rendering; the dry-run above needs the cluster).
func TestKustomizeWebhookWithoutClientCA(t *testing.T) {
	for _, tc := range []struct {
		components []string
		ca         bool
	}{
		{[]string{"webhook"}, true},
		// The old way to add it, the component listed again, still works.
		{[]string{"webhook", "webhook-client-ca"}, true},
		{[]string{"webhook", "webhook-no-client-ca"}, false},
	} {
		overlay := t.TempDir()
		base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
		if err != nil {
			t.Fatal(err)
		}
		kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + base + "\ncomponents:\n"
		for _, c := range tc.components {
			kustomization += "- " + filepath.Join(base, c) + "\n"
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		objs := kustomize(t, overlay)
		env, volumes := containerEnv(t, objs)
		container, _ := operatorContainer(t, objs)
		mounted := false
		for _, m := range container["volumeMounts"].([]any) {
			mounted = mounted || m.(map[string]any)["mountPath"] == "/client-ca"
		}
		_, set := env["HOOK_OPERATOR_WEBHOOK_CLIENT_CA"]
		if set != tc.ca || mounted != tc.ca || (volumes["client-ca"] != nil) != tc.ca {
			t.Errorf("%v: client CA set %v, mounted %v, volume %v; want %v", tc.components, set, mounted, volumes["client-ca"] != nil, tc.ca)
		}
		if env["HOOK_OPERATOR_WEBHOOK_LISTEN_ADDRESS"] != ":9680" {
			t.Errorf("%v: the webhook's settings are gone: %v", tc.components, env)
		}
	}
}
