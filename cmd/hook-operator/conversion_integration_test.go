package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The real API server calls the operator's conversion webhook (registered
// by URL in the CRD's spec.conversion, with the CA bundle): objects stored
// as v1alpha1 are read as v1alpha2 through one hook's rule, and as v1
// through a chain of two rules of two hooks (the second declared with a
// version without its group, as shell-operator allows); a hook's
// failedMessage reaches the client and becomes an Event on the CRD; and an
// operator whose hooks no longer convert the CRD gives its spec.conversion
// back (strategy None). The CRD is the test's own and is deleted at the end.
func TestIntegrationConversionWebhook(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	group := ns + ".conversion-test.example.com"
	crd := w.installCRD(t, group, "crontabs", "CronTab", "v1alpha1", "v1alpha2", "v1")

	w.hook(t, "alpha.sh", yamlHook(`configVersion: v1
kubernetesCustomResourceConversion:
- name: alpha1_to_alpha2
  crdName: `+crd+`
  conversions:
  - {fromVersion: `+group+`/v1alpha1, toVersion: `+group+`/v1alpha2}`, `if jq -e '.[0].review.request.objects | any(.spec.fail == true)' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo '{"failedMessage": "spec.fail is set: this object cannot be converted"}' >"$CONVERSION_RESPONSE_PATH"
  exit 0
fi
jq '{convertedObjects: [.[0] as $c | $c.review.request.objects[] |
  if .apiVersion == $c.fromVersion then .apiVersion = $c.toVersion | .spec.cron = (.spec.cron | join(" ")) else . end]}' \
  "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"
`))
	w.hook(t, "stable.sh", yamlHook(`configVersion: v1
kubernetesCustomResourceConversion:
- name: alpha2_to_v1
  crdName: `+crd+`
  conversions:
  - {fromVersion: v1alpha2, toVersion: v1}`, `jq '{convertedObjects: [.[0].review.request.objects[] |
  if (.apiVersion | endswith("/v1alpha2")) then .apiVersion = "`+group+`/v1" | .spec.schedule = .spec.cron | del(.spec.cron) else . end]}' \
  "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"
`))
	// A configuration name of the test's own: operators of other tests,
	// running at the same time with the default name and no conversion
	// bindings, would otherwise give this conversion back.
	configName := "conversion-" + ns
	o := w.startWebhooks(t, configName)
	o.waitLog(t, `"msg":"conversion webhook registered in the CRD"`)

	w.applyNightly(t, group)
	get := func(version, name, path string) (string, error) {
		b, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "-n", ns, "get", "crontabs."+version+"."+group, name, "-o", "jsonpath="+path).CombinedOutput()
		return string(b), err
	}
	var got string
	var err error
	waitUntil(t, "the object read as v1alpha2", func() bool {
		got, err = get("v1alpha2", "nightly", "{.apiVersion} {.spec.cron}")
		return err == nil && got == group+"/v1alpha2 0 3 * * *"
	}, func() string {
		b, _ := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "-n", ns, "get", "crontabs.v1alpha2."+group, "nightly", "-o", "json", "-v", "6").CombinedOutput()
		b2, _ := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "get", "crd", crd, "-o", "jsonpath={.spec.conversion}").CombinedOutput()
		return got + "\n" + string(b) + "\n" + string(b2) + "\n" + o.logs.String()
	})
	if got, err = get("v1", "nightly", "{.apiVersion} {.spec.schedule}"); err != nil || got != group+"/v1 0 3 * * *" {
		t.Errorf("read as v1 through the chain alpha1_to_alpha2, alpha2_to_v1: %q, %v", got, err)
	}

	w.apply(t, fmt.Sprintf(`apiVersion: %s/v1alpha1
kind: CronTab
metadata: {name: broken, namespace: %s}
spec: {cron: ["*"], fail: true}
`, group, ns))
	if got, err = get("v1alpha2", "broken", "{.spec}"); err == nil || !strings.Contains(got, "spec.fail is set: this object cannot be converted") {
		t.Errorf("a failed conversion: %v\n%s; want the hook's failedMessage", err, got)
	}
	waitUntil(t, "a ConversionFailed Event on the CRD", func() bool {
		b, _ := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "get", "events", "-n", "default",
			"--field-selector", "involvedObject.kind=CustomResourceDefinition,involvedObject.name="+crd+",reason=ConversionFailed",
			"-o", "jsonpath={.items[*].message}").CombinedOutput()
		got = string(b)
		return strings.Contains(got, "spec.fail is set")
	}, func() string { return got })
	for series, min := range map[string]float64{
		`hook_operator_webhook_requests_total{binding="alpha2_to_v1",code="200",hook="stable.sh",kind="conversion",result="converted"}`:  1,
		`hook_operator_webhook_requests_total{binding="alpha1_to_alpha2",code="422",hook="alpha.sh",kind="conversion",result="refused"}`: 1,
	} {
		if got := o.metric(t, series); got < min {
			t.Errorf("%s = %v, want at least %v", series, got, min)
		}
	}

	// Another operator (another configuration name) without conversion
	// bindings leaves this one's conversion alone.
	other := startOperator(t, t.TempDir(), operatorOpts{flags: []string{"--webhook-configuration-name", "other-" + ns}})
	other.waitLog(t, `"msg":"all bindings started; running"`)
	u, err := c.Dynamic.Resource(crdGVR).Get(context.Background(), crd, metav1.GetOptions{})
	must(t, err)
	if strategy, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
		t.Errorf("another operator's start changed the CRD's conversion strategy to %q", strategy)
	}
	_ = other.stop(t)

	// Without conversion bindings for the CRD, the operator gives back the
	// spec.conversion it set.
	_ = o.stop(t)
	startOperator(t, t.TempDir(), operatorOpts{flags: webhookFlags(w.certs, w.port, configName)})
	waitUntil(t, "the CRD's conversion strategy back to None", func() bool {
		u, err := c.Dynamic.Resource(crdGVR).Get(context.Background(), crd, metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = fmt.Sprint(u.Object["spec"].(map[string]any)["conversion"])
		return got == "map[strategy:None]"
	}, func() string { return got })
}

// errWith adds a command's output to its error.
func errWith(err error, out string) error {
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}
