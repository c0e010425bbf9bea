package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

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
