package main_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// webhookStartSetup writes a validating hook that denies labelled
// ConfigMaps of ns, and returns the hooks folder and the flags that serve
// it by --webhook-url under a configuration of the test's own (deleted at
// the end).
func webhookStartSetup(t *testing.T, c *testcluster.Cluster, ns string) (hooks, configName string, args []string) {
	t.Helper()
	configName = "hook-operator-start-" + ns
	deleteConfigurationsAtEnd(t, c, configName)
	hooks = t.TempDir()
	selectors := fmt.Sprintf(`"namespace":{"labelSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}}},"labelSelector":{"matchLabels":{"start-test":"yes"}}`, ns)
	writeHook(t, hooks, "policy.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"values.start-test.example.com",`+
		`"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}],`+selectors+`}]}`, `
echo '{"allowed": false, "message": "denied by the policy hook"}' >"$VALIDATING_RESPONSE_PATH"
`))
	_, certs, port := servingSetup(t)
	args = webhookFlags(certs, port, configName)
	return hooks, configName, args
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
	h := newHarness(t)
	hooks, configName, args := webhookStartSetup(t, h.c, h.ns)
	p, kubeconfig := proxiedKubeconfig(t, h.c.Kubeconfig)
	p.stop()

	o := startOperator(t, hooks, operatorOpts{kubeconfig: kubeconfig, flags: args})
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
	if _, err := h.c.Dynamic.Resource(validatingConfigurations).Get(context.Background(), configName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the configuration: %v", err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checked, namespace: %s, labels: {start-test: \"yes\"}}\n", h.ns)
	o.waitFor(t, "the hook's denial", func() bool {
		msg, err := kubectlApply(h.c.Kubeconfig, cm)
		return err != nil && strings.Contains(msg, "denied by the policy hook")
	})
}

// A registration the API server forbids (a ServiceAccount without RBAC on
// webhook configurations) ends start-up at once, not after the retries of
// transient errors, with the verb refused and the RBAC the operator needs.
func TestIntegrationWebhookRegistrationForbiddenFailsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	hooks, configName, args := webhookStartSetup(t, h.c, h.ns)

	// The ServiceAccount "nobody" of ns has no role at all.
	cfg, err := clientcmd.LoadFromFile(h.c.Kubeconfig)
	must(t, err)
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + h.ns + ":nobody"
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, kubeconfig))

	// Well under the 60 s that transient errors are tried for.
	out := startFails(t, hooks, operatorOpts{kubeconfig: kubeconfig, flags: args}, 30*time.Second)
	for _, want := range []string{`cannot patch resource "validatingwebhookconfigurations"`,
		"get, patch and delete on validatingwebhookconfigurations named " + configName, "hook-operator rbac"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "trying again") {
		t.Errorf("a Forbidden registration was tried again:\n%s", out)
	}
}
