package main_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// Webhooks through the binary on the local cluster: what a test of them
// starts from (webhookTest), registration at start, and webhook bindings
// that reload in place.

// The resources of CustomResourceDefinitions and of the two kinds of
// webhook configurations.
var (
	crdGVR                   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	validatingConfigurations = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingConfigurations   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// deleteConfigurationsAtEnd deletes the webhook configurations named name,
// of both kinds, when the test ends, so that no webhook of the test's is
// left for other tests' requests to reach.
func deleteConfigurationsAtEnd(t *testing.T, c *testcluster.Cluster, name string) {
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{validatingConfigurations, mutatingConfigurations} {
			_ = c.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// A webhookTest is what a test of the operator's webhooks starts from: a
// harness, and a certificate for 127.0.0.1 with a free port to serve it on
// (servingSetup).
type webhookTest struct {
	*harness
	ca          *localcerts.CA
	certs, port string
}

// newWebhookTest gets a harness and a serving certificate and port.
func newWebhookTest(t *testing.T) *webhookTest {
	t.Helper()
	w := &webhookTest{harness: newHarness(t)}
	w.ca, w.certs, w.port = servingSetup(t)
	return w
}

// webhookFlags are the flags of an operator that serves its webhooks on
// 127.0.0.1:port with the certificate in certs (servingSetup's), registered
// by URL with its CA, under the configuration name configName.
func webhookFlags(certs, port, configName string) []string {
	return []string{"--webhook-listen-address", "127.0.0.1:" + port, "--webhook-url", "https://127.0.0.1:" + port,
		"--webhook-cert", filepath.Join(certs, "tls.crt"), "--webhook-key", filepath.Join(certs, "tls.key"),
		"--webhook-ca", filepath.Join(certs, "ca.crt"), "--webhook-configuration-name", configName}
}

// startWebhooks starts an operator on the harness's hooks folder that
// serves its webhooks under configName (webhookFlags), with the flags extra
// besides.
func (w *webhookTest) startWebhooks(t *testing.T, configName string, extra ...string) *observed {
	t.Helper()
	return w.start(t, append(webhookFlags(w.certs, w.port, configName), extra...)...)
}

// labelledConfigMap is the manifest of the ConfigMap name of ns, labelled
// admission-test=yes (what the admission tests' webhooks select), with
// data.value.
func labelledConfigMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {admission-test: \"yes\"}}\ndata: {value: %s}\n", name, ns, value)
}

// waitDenied applies manifest until the API server refuses it with a
// message that holds want (a new webhook configuration reaches the API
// server within a moment), failing t after a minute; it returns kubectl's
// output.
func (w *webhookTest) waitDenied(t *testing.T, o *observed, manifest, want string) string {
	t.Helper()
	var out string
	waitUntil(t, "a denial saying "+want, func() bool {
		var err error
		out, err = kubectlApply(w.c.Kubeconfig, manifest)
		return err != nil && strings.Contains(out, want)
	}, func() string { return out + "\n" + o.logs.String() })
	return out
}

// installCRD applies the namespaced CRD plural.group of kind, with the
// versions given (the first stored), each keeping any spec, and deletes it
// when the test ends. It returns the CRD's name.
func (w *webhookTest) installCRD(t *testing.T, group, plural, kind string, versions ...string) string {
	t.Helper()
	name := plural + "." + group
	t.Cleanup(func() { _ = w.c.Dynamic.Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var list strings.Builder
	for i, v := range versions {
		fmt.Fprintf(&list, `
  - name: %s
    served: true
    storage: %t
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}`, v, i == 0)
	}
	out, err := kubectlApply(w.c.Kubeconfig, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  group: %s
  scope: Namespaced
  names: {plural: %s, singular: %s, kind: %s}
  versions:%s
`, name, group, plural, strings.ToLower(kind), kind, list.String()))
	must(t, errWith(err, out))
	return name
}

// applyNightly applies the CronTab nightly of the test's namespace as
// group/v1alpha1, with spec.cron a list of the cron fields: what the
// conversion tests' hooks convert.
func (w *webhookTest) applyNightly(t *testing.T, group string) {
	t.Helper()
	w.apply(t, fmt.Sprintf(`apiVersion: %s/v1alpha1
kind: CronTab
metadata: {name: nightly, namespace: %s}
spec: {cron: ["0", "3", "*", "*", "*"]}
`, group, w.ns))
}

// policyHook writes denyingHook's hook for ConfigMaps labelled
// start-test, and returns the name of its configuration and the flags
// that serve the hook by --webhook-url under it.
func (w *webhookTest) policyHook(t *testing.T) (configName string, args []string) {
	t.Helper()
	configName = w.denyingHook(t, "start-test")
	return configName, webhookFlags(w.certs, w.port, configName)
}

// denyingHook writes policy.sh, a validating hook that denies the creation
// of ConfigMaps labelled label=yes in the test's namespace, and returns
// the name of a webhook configuration of the test's own (deleted at the
// end) to register it under.
func (h *harness) denyingHook(t *testing.T, label string) (configName string) {
	t.Helper()
	configName = "hook-operator-" + label + "-" + h.ns
	deleteConfigurationsAtEnd(t, h.c, configName)
	selectors := fmt.Sprintf(`"namespace":{"labelSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}}},"labelSelector":{"matchLabels":{%q:"yes"}}`, h.ns, label)
	h.hook(t, "policy.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"values.`+label+`.example.com",`+
		`"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}],`+selectors+`}]}`, `
echo '{"allowed": false, "message": "denied by the policy hook"}' >"$VALIDATING_RESPONSE_PATH"
`))
	return configName
}

// shell-operator v1.20's #899: the API server out of reach while the
// operator starts does not end start-up. The operator's own connection to
// the API server (a proxy of the test's) is down when it starts: the
// registration of its validating webhook fails, is logged with its
// attempt number and the next wait, and /readyz says not ready; once the
// connection is back the configuration is registered, the operator is
// ready, and the API server calls the hook.
func TestIntegrationWebhookRegistrationRetriedAtStart(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	configName, args := w.policyHook(t)
	p, kubeconfig := proxiedKubeconfig(t, w.c.Kubeconfig)
	p.stop()

	o := startOperator(t, w.hooks, operatorOpts{kubeconfig: kubeconfig, flags: args})
	o.waitFor(t, "a second failed attempt, logged", func() bool {
		return strings.Contains(o.logs.String(), `"attempt":2,`) && strings.Contains(o.logs.String(), `"msg":"serving and registering the webhooks found at start failed; trying again"`)
	})
	if !strings.Contains(o.logs.String(), `"retryIn":"`) || !strings.Contains(o.logs.String(), "connection refused") {
		t.Errorf("a failed attempt is logged without its next wait or its error:\n%s", o.logs.String())
	}
	if code, body := o.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while the registration is tried again: %d %q, want 503", code, body)
	}

	p.restart(t)
	o.waitLog(t, `"msg":"the webhooks found at start are served and registered"`)
	o.waitReady(t)
	if _, err := w.c.Dynamic.Resource(validatingConfigurations).Get(context.Background(), configName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the configuration: %v", err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checked, namespace: %s, labels: {start-test: \"yes\"}}\n", w.ns)
	o.waitFor(t, "the hook's denial", func() bool {
		msg, err := kubectlApply(w.c.Kubeconfig, cm)
		return err != nil && strings.Contains(msg, "denied by the policy hook")
	})
}

// A registration the API server forbids (a ServiceAccount without RBAC on
// webhook configurations) ends start-up at once, not after the retries of
// transient errors, with the verb refused and the RBAC the operator needs.
func TestIntegrationWebhookRegistrationForbiddenFailsAtOnce(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	configName, args := w.policyHook(t)

	// The ServiceAccount "nobody" of ns has no role at all.
	cfg, err := clientcmd.LoadFromFile(w.c.Kubeconfig)
	must(t, err)
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + w.ns + ":nobody"
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, kubeconfig))

	// Well under the 60 s that transient errors are tried for.
	out := startFails(t, w.hooks, operatorOpts{kubeconfig: kubeconfig, flags: args}, 30*time.Second)
	wantAll(t, "the error", out, `cannot patch resource "validatingwebhookconfigurations"`,
		"get, patch and delete on validatingwebhookconfigurations named "+configName, "hook-operator rbac")
	if strings.Contains(out, "trying again") {
		t.Errorf("a Forbidden registration was tried again:\n%s", out)
	}
}

// Webhook bindings reload in place (through the binary, on the local
// cluster, with the hooks folder updated as a ConfigMap volume):
//   - the first admission binding, added when none existed at start,
//     starts the listener and registers its configuration;
//   - a changed validating binding and an added mutating one are
//     registered, and a request in flight during the change gets the
//     answer of the hook it started with (never an error caused by the
//     swap); the next requests get the new hook's;
//   - the last bindings removed delete both configurations, and requests
//     are no longer checked.
//
// The webhooks only match labelled ConfigMaps of the test's own
// namespace, and the configurations are deleted at the end, so other
// tests' requests never reach them.
func TestIntegrationWebhookBindingsReload(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns, port := w.c, w.ns, w.port
	configName := "hook-operator-test-" + ns
	marks := t.TempDir()
	deleteConfigurationsAtEnd(t, c, configName)

	selectors := fmt.Sprintf(`"namespace":{"labelSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}}},"labelSelector":{"matchLabels":{"reload-test":"yes"}}`, ns)
	rules := `"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]`
	// validate denies every value but "ok" with the hook's version; the
	// value "slow" leaves a mark and answers after 3 s. The version is
	// in timeoutSeconds too, so that each is a change of the binding; 10
	// and 11 s, not 5 and 6: with 5, the run's budget (3.8 s once the
	// margin and graces are taken off) left jq and bash 0.8 s besides the
	// sleep, which a loaded 2-core machine overran.
	validate := func(version, timeout int) string {
		config := fmt.Sprintf(`{"configVersion":"v1","kubernetesValidating":[{"name":"values.reload-test.example.com","timeoutSeconds":%d,%s,%s}]}`, timeout, rules, selectors)
		return bashHook(config, fmt.Sprintf(`set -euo pipefail
value=$(jq -r '.[0].review.request.object.data.value // ""' "$BINDING_CONTEXT_PATH")
if [[ $value == slow ]]; then : >%q; sleep 3; fi
if [[ $value == ok ]]; then echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"; exit 0; fi
echo '{"allowed": false, "message": "denied by version %d"}' >"$VALIDATING_RESPONSE_PATH"
`, filepath.Join(marks, "slow-started"), version))
	}
	mutate := bashHook(`{"configVersion":"v1","kubernetesMutating":[{"name":"labels.reload-test.example.com",`+rules+`,`+selectors+`}]}`, `
patch=$(echo '[{"op": "add", "path": "/metadata/labels/mutated", "value": "by-hook"}]' | base64 -w0)
echo "{\"allowed\": true, \"patch\": \"$patch\"}" >"$ADMISSION_RESPONSE_PATH"
`)
	started := filepath.Join(marks, "started")
	startup := bashHook(`{"configVersion":"v1","onStartup":1}`, ": >"+started+"\n")
	testoperator.ConfigMapVolume(t, w.hooks, "1", map[string]string{"startup.sh": startup})

	o := w.startWebhooks(t, configName, "--hooks-reload-poll-period", "1s")
	o.waitFor(t, "the onStartup run", func() bool { _, err := os.Stat(started); return err == nil })
	if conn, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
		conn.Close()
		t.Fatalf("the webhook listener runs although no hook has a webhook binding:\n%s", o.logs.String())
	}
	applied := func(n int) func() bool {
		return func() bool { return strings.Count(o.logs.String(), `"msg":"webhook configuration applied"`) >= n }
	}
	cm := func(name, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {reload-test: \"yes\"}}\ndata: {value: %s}\n", name, ns, value)
	}
	deniedBy := func(name string, version int) func() bool {
		return func() bool {
			out, err := kubectlApply(c.Kubeconfig, cm(name, "bad"))
			return err != nil && strings.Contains(out, fmt.Sprintf("denied by version %d", version))
		}
	}

	// The first admission binding: the listener starts, the configuration
	// is registered, and the API server calls the hook.
	testoperator.ConfigMapVolume(t, w.hooks, "2", map[string]string{"startup.sh": startup, "validate.sh": validate(1, 10)})
	o.waitFor(t, "the validating configuration", applied(1))
	o.waitFor(t, "a denial by version 1", deniedBy("bad-1", 1))

	// A request in flight while the binding changes.
	type result struct {
		out string
		err error
	}
	inFlight := make(chan result, 1)
	go func() {
		out, err := kubectlApply(c.Kubeconfig, cm("slow", "slow"))
		inFlight <- result{out, err}
	}()
	o.waitFor(t, "the slow request's hook to run", func() bool {
		_, err := os.Stat(filepath.Join(marks, "slow-started"))
		return err == nil
	})
	testoperator.ConfigMapVolume(t, w.hooks, "3", map[string]string{"startup.sh": startup, "validate.sh": validate(2, 11), "mutate.sh": mutate})
	o.waitFor(t, "both configurations applied again", applied(3))
	r := <-inFlight
	if r.err == nil || !strings.Contains(r.out, "denied by version 1") && !strings.Contains(r.out, "denied by version 2") {
		t.Errorf("the request in flight during the change: %v\n%s\nwant the denial of version 1 or 2", r.err, r.out)
	}
	o.waitFor(t, "a denial by version 2", deniedBy("bad-2", 2))
	var out string
	tries := 0
	waitUntil(t, "the added mutating hook's label", func() bool {
		tries++
		name := fmt.Sprintf("ok-%d", tries)
		var err error
		if out, err = kubectlApply(c.Kubeconfig, cm(name, "ok")); err != nil {
			return false
		}
		got, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && got.Labels["mutated"] == "by-hook"
	}, func() string { return out + "\n" + o.logs.String() })

	// The last admission bindings removed: both configurations go, and
	// the API server stops calling the operator.
	testoperator.ConfigMapVolume(t, w.hooks, "4", map[string]string{"startup.sh": startup})
	o.waitFor(t, "both configurations deleted", func() bool {
		for _, gvr := range []schema.GroupVersionResource{validatingConfigurations, mutatingConfigurations} {
			if _, err := c.Dynamic.Resource(gvr).Get(context.Background(), configName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
	o.waitFor(t, "a bad value allowed", func() bool {
		_, err := kubectlApply(c.Kubeconfig, cm("bad-after", "bad"))
		return err == nil
	})
}

// Conversion bindings reload in place too: added when none existed at
// start, the CRD's spec.conversion points at the operator and the hook
// converts; changed, the new hook converts; removed, the CRD's
// conversion is given back (strategy None). The CRD is the test's own.
func TestIntegrationConversionBindingReload(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	group := ns + ".reload-test.example.com"
	crd := w.installCRD(t, group, "gadgets", "Gadget", "v1alpha1", "v1")

	marks := t.TempDir()
	// convert sets spec.by to the hook's version; the binding's name
	// carries the version too, so that each is a change of the binding.
	convert := func(v int) string {
		config := fmt.Sprintf(`{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"to_v1_%d","crdName":%q,"conversions":[{"fromVersion":"%s/v1alpha1","toVersion":"%s/v1"}]}]}`, v, crd, group, group)
		return bashHook(config, fmt.Sprintf(`set -euo pipefail
jq '{convertedObjects: [.[0] as $c | $c.review.request.objects[] | .apiVersion = $c.toVersion | .spec.by = "version %d"]}' "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"
`, v))
	}
	started := filepath.Join(marks, "started")
	startup := bashHook(`{"configVersion":"v1","onStartup":1}`, ": >"+started+"\n")
	testoperator.ConfigMapVolume(t, w.hooks, "1", map[string]string{"startup.sh": startup})
	o := w.startWebhooks(t, "conversion-"+ns)
	o.waitFor(t, "the onStartup run", func() bool { _, err := os.Stat(started); return err == nil })

	w.apply(t, fmt.Sprintf("apiVersion: %s/v1alpha1\nkind: Gadget\nmetadata: {name: g, namespace: %s}\nspec: {size: 1}\n", group, ns))
	v1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	convertedBy := func(want string) func() bool {
		return func() bool {
			u, err := c.Dynamic.Resource(v1).Namespace(ns).Get(context.Background(), "g", metav1.GetOptions{})
			if err != nil {
				return false
			}
			by, _, _ := unstructured.NestedString(u.Object, "spec", "by")
			return by == want
		}
	}
	strategy := func(want string) func() bool {
		return func() bool {
			u, err := c.Dynamic.Resource(crdGVR).Get(context.Background(), crd, metav1.GetOptions{})
			if err != nil {
				return false
			}
			got, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy")
			return got == want
		}
	}

	testoperator.ConfigMapVolume(t, w.hooks, "2", map[string]string{"startup.sh": startup, "convert.sh": convert(1)})
	o.waitFor(t, "the conversion registered", strategy("Webhook"))
	o.waitFor(t, "a read as v1 converted by version 1", convertedBy("version 1"))

	testoperator.ConfigMapVolume(t, w.hooks, "3", map[string]string{"startup.sh": startup, "convert.sh": convert(2)})
	o.waitFor(t, "a read as v1 converted by version 2", convertedBy("version 2"))

	testoperator.ConfigMapVolume(t, w.hooks, "4", map[string]string{"startup.sh": startup})
	o.waitFor(t, "the conversion given back", strategy("None"))
	o.waitFor(t, "a read as v1 that no hook converts", convertedBy(""))
}
