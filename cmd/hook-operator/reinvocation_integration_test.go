package main_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

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
