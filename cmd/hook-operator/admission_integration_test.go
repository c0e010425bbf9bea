package main_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// servingSetup writes a test CA (ca.crt) and a serving certificate for
// 127.0.0.1 it signs (tls.crt, tls.key) to a new folder, and picks a free
// port: what an operator serving webhooks by URL needs.
func servingSetup(t *testing.T) (ca *localcerts.CA, certs, port string) {
	t.Helper()
	certs = t.TempDir()
	ca, err := localcerts.NewCA("hook-operator test CA")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(certs, "ca.crt"), ca.PEM, 0o600))
	must(t, ca.WriteServing(certs, 100))
	return ca, certs, testoperator.FreePort(t)
}

// kubectlApply applies manifest and returns its output and error.
func kubectlApply(kubeconfig, manifest string) (string, error) {
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// The real API server calls the operator's webhook server (registered by
// URL, with the CA bundle from --webhook-ca): a validating hook's denial
// refuses a create with the hook's message, its warnings reach kubectl, a
// mutating hook's patch is applied, a hook that hangs gives a denial within
// the binding's timeout, and a certificate swapped on disk is served without
// a restart. The webhooks only match labelled ConfigMaps of the test's own
// namespace, and the configurations are deleted at the end, so other tests'
// requests never reach them.
func TestIntegrationAdmissionWebhooks(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns, ca, certs, port := w.c, w.ns, w.ca, w.certs, w.port
	configName := "hook-operator-test-" + ns

	selectors := fmt.Sprintf(`
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}}
  labelSelector: {matchLabels: {admission-test: "yes"}}`, ns)

	w.hook(t, "validate.sh", yamlHook(`configVersion: v1
kubernetesValidating:
- name: values.admission-test.example.com
  timeoutSeconds: 2
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE, UPDATE]}]`+selectors, `value=$(jq -r '.[0].review.request.object.data.value // ""' "$BINDING_CONTEXT_PATH")
case $value in
  bad)  echo '{"allowed": false, "message": "value bad is not allowed here"}' >"$VALIDATING_RESPONSE_PATH" ;;
  hang) sleep 20 ;;
  deaf) trap '' TERM; sleep 20 & while :; do wait || true; done ;;
  *)    echo '{"allowed": true, "warnings": ["checked by validate.sh"]}' >"$VALIDATING_RESPONSE_PATH" ;;
esac
`))
	w.hook(t, "mutate.sh", yamlHook(`configVersion: v1
kubernetesMutating:
- name: labels.admission-test.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]`+selectors, `patch=$(echo '[{"op": "add", "path": "/metadata/labels/mutated", "value": "by-hook"}]' | base64 -w0)
echo "{\"allowed\": true, \"patch\": \"$patch\"}" >"$ADMISSION_RESPONSE_PATH"
`))
	deleteConfigurationsAtEnd(t, c, configName)
	o := w.startWebhooks(t, configName)
	o.waitFor(t, "both webhook configurations", func() bool {
		return strings.Count(o.logs.String(), `"msg":"webhook configuration applied"`) == 2
	})

	cm := func(name, value string) string { return labelledConfigMap(ns, name, value) }
	out := w.waitDenied(t, o, cm("bad", "bad"), "value bad is not allowed here")
	if !strings.Contains(out, `admission webhook "values.admission-test.example.com" denied the request`) {
		t.Errorf("kubectl's message does not name the webhook:\n%s", out)
	}

	out, err := kubectlApply(c.Kubeconfig, cm("good", "fine"))
	if err != nil || !strings.Contains(out, "Warning: checked by validate.sh") {
		t.Errorf("an allowed create: %v; want kubectl to print the hook's warning:\n%s", err, out)
	}
	got, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "-n", ns, "get", "configmap", "good", "-o", "jsonpath={.metadata.labels.mutated}").CombinedOutput()
	if err != nil || string(got) != "by-hook" {
		t.Errorf("the mutating hook's label: %q, %v", got, err)
	}

	// A hook that ignores SIGTERM ("deaf") is killed early enough for its
	// denial to reach the API server within timeoutSeconds: were the
	// operator's usual 5 s kill grace added, the API server would have
	// given up ("context deadline exceeded") before the answer.
	for _, value := range []string{"hang", "deaf"} {
		start := time.Now()
		out, err = kubectlApply(c.Kubeconfig, cm("slow-"+value, value))
		if err == nil || !strings.Contains(out, "hook validate.sh did not answer in time") {
			t.Errorf("a hook that does not answer (%s): %v\n%s; want a denial saying the hook did not answer in time", value, err, out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a hook that does not answer (%s) with timeoutSeconds 2 took %s to be denied", value, d)
		}
	}

	for series, min := range map[string]float64{
		`hook_operator_webhook_requests_total{binding="values.admission-test.example.com",code="403",hook="validate.sh",kind="validating",result="denied"}`: 1,
		`hook_operator_webhook_requests_total{binding="labels.admission-test.example.com",code="200",hook="mutate.sh",kind="mutating",result="allowed"}`:    1,
		`hook_operator_webhook_hook_timeouts_total{binding="values.admission-test.example.com",hook="validate.sh"}`:                                         1,
	} {
		if got := o.metric(t, series); got < min {
			t.Errorf("%s = %v, want at least %v", series, got, min)
		}
	}

	// A certificate swapped on disk (signed by the same CA) is served from
	// the next handshake after the reloader looks again, without a restart.
	must(t, ca.WriteServing(certs, 200))
	pool := ca.Pool()
	o.waitFor(t, "the new certificate", func() bool {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: pool})
		if err != nil {
			return false
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64() == 200
	})
	out, err = kubectlApply(c.Kubeconfig, cm("after-rotation", "fine"))
	if err != nil {
		t.Errorf("a create after the certificate was swapped: %v\n%s", err, out)
	}
}

// A dry run serves admission bindings but allows every request: the
// client sees what the hook would have answered as a warning, the
// configuration is the dry run's own (-dry-run, failurePolicy Ignore even
// where the binding says Fail), and it is deleted when the dry run stops.
// Its certificate is self-signed: made on start-up, kept in a Secret of
// the operator's namespace, its CA registered.
func TestIntegrationAdmissionDryRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	port := testoperator.FreePort(t)
	configName := "hook-operator-test-" + h.ns
	gvr := validatingConfigurations
	deleteConfigurationsAtEnd(t, h.c, configName+"-dry-run")

	h.hook(t, "validate.sh", yamlHook(`configVersion: v1
kubernetesValidating:
- name: dry.admission-test.example.com
  failurePolicy: Fail
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: `+h.ns+`}}}`, `echo '{"allowed": false, "message": "nothing may be created here"}' >"$VALIDATING_RESPONSE_PATH"
`))
	// The certificates are the operator's own (--webhook-self-signed).
	o := h.start(t, "--dry-run",
		"--webhook-listen-address", "127.0.0.1:"+port, "--webhook-url", "https://127.0.0.1:"+port,
		"--webhook-self-signed", "--operator-namespace", h.ns, "--webhook-configuration-name", configName)
	o.waitLog(t, `"msg":"webhook configuration applied"`)
	u, err := h.c.Dynamic.Resource(gvr).Get(context.Background(), configName+"-dry-run", metav1.GetOptions{})
	must(t, err)
	webhooks, _ := u.Object["webhooks"].([]any)
	secret, err := h.c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(h.ns).Get(context.Background(), "hook-operator-webhook-certs", metav1.GetOptions{})
	must(t, err)
	if len(webhooks) == 1 {
		cc, _ := webhooks[0].(map[string]any)["clientConfig"].(map[string]any)
		if ca, _ := secret.Object["data"].(map[string]any)["ca.crt"].(string); ca == "" || cc["caBundle"] != ca {
			t.Errorf("the registered caBundle is not the CA of the self-signed Secret")
		}
	}
	if len(webhooks) != 1 || webhooks[0].(map[string]any)["failurePolicy"] != "Ignore" {
		t.Errorf("the dry run's webhooks: %v; want one with failurePolicy Ignore", webhooks)
	}

	var out string
	waitUntil(t, "the create allowed with the hook's answer as a warning", func() bool {
		out, err = kubectlApply(h.c.Kubeconfig, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tried, namespace: %s}\n", h.ns))
		return err == nil && strings.Contains(out, "hook-operator dry run: validate.sh, binding dry.admission-test.example.com would deny it: nothing may be created here")
	}, func() string { return out + "\n" + o.logs.String() })

	_ = o.stop(t)
	if _, err := h.c.Dynamic.Resource(gvr).Get(context.Background(), configName+"-dry-run", metav1.GetOptions{}); err == nil {
		t.Errorf("the dry run's configuration is still there after it stopped")
	}
}

// reinvocationPolicy through the binary and the real API server: one hook
// has two mutating bindings, "first" (reinvocationPolicy IfNeeded) and
// then "second", which adds a label. The API server calls first again
// after second changed the object, and first, seeing second's label,
// marks the object. A reload that leaves the policy out updates the
// registered webhook in place (Never, the default), and first is no
// longer called again.
//
// The webhooks only match labelled ConfigMaps of the test's own
// namespace, and the configuration is deleted at the end.
func TestIntegrationMutatingReinvocationPolicy(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	configName := "reinvocation-test-" + ns
	gvr := mutatingConfigurations
	deleteConfigurationsAtEnd(t, c, configName)

	selectors := fmt.Sprintf(`"namespace":{"labelSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}}},"labelSelector":{"matchLabels":{"reinvocation-test":"yes"}}`, ns)
	rules := `"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]`
	defaults := func(policy string) string {
		if policy != "" {
			policy = fmt.Sprintf(`"reinvocationPolicy":%q,`, policy)
		}
		config := fmt.Sprintf(`{"configVersion":"v1","kubernetesMutating":[{"name":"first.reinvocation-test.example.com",%s%s,%s},{"name":"second.reinvocation-test.example.com",%s,%s}]}`,
			policy, rules, selectors, rules, selectors)
		return bashHook(config, `set -euo pipefail
binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
label=first
if [[ $binding == second.* ]]; then
  label=second
elif jq -e '.[0].review.request.object.metadata.labels.second' "$BINDING_CONTEXT_PATH" >/dev/null; then
  label=first-saw-second
fi
patch=$(echo "[{\"op\": \"add\", \"path\": \"/metadata/labels/$label\", \"value\": \"yes\"}]" | base64 -w0)
echo "{\"allowed\": true, \"patch\": \"$patch\"}" >"$ADMISSION_RESPONSE_PATH"
`)
	}

	testoperator.ConfigMapVolume(t, w.hooks, "1", map[string]string{"defaults.sh": defaults("IfNeeded")})
	o := w.startWebhooks(t, configName, "--hooks-reload-poll-period", "1s")

	registered := func(want string) func() bool {
		return func() bool {
			u, err := c.Dynamic.Resource(gvr).Get(context.Background(), configName, metav1.GetOptions{})
			if err != nil {
				return false
			}
			webhooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			return len(webhooks) == 2 && webhooks[0].(map[string]any)["reinvocationPolicy"] == want
		}
	}
	// labels creates ConfigMaps until both hooks' labels are on one (the
	// API server may take a moment to use a new configuration), and
	// reports whether first saw second's label.
	tries := 0
	var out string
	created := func(sawSecond bool) func() bool {
		return func() bool {
			tries++
			name := fmt.Sprintf("cm-%d", tries)
			var err error
			if out, err = kubectlApply(c.Kubeconfig, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {reinvocation-test: \"yes\"}}\n", name, ns)); err != nil {
				return false
			}
			got, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			l := got.Labels
			out = fmt.Sprintf("%s labels: %v", name, l)
			return l["first"] == "yes" && l["second"] == "yes" && (l["first-saw-second"] == "yes") == sawSecond
		}
	}
	logs := func() string { return out + "\n" + o.logs.String() }

	waitUntil(t, "the webhook registered with reinvocationPolicy IfNeeded", registered("IfNeeded"), logs)
	waitUntil(t, "first called again after second changed the object", created(true), logs)

	testoperator.ConfigMapVolume(t, w.hooks, "2", map[string]string{"defaults.sh": defaults("")})
	waitUntil(t, "the reloaded webhook's reinvocationPolicy back to the default, Never", registered("Never"), logs)
	waitUntil(t, "first called once", created(false), logs)
	if !strings.Contains(o.logs.String(), `"msg":"webhook configuration applied"`) {
		t.Errorf("no log of the configuration applied:\n%s", o.logs.String())
	}
}
