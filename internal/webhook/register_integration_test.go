package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The configurations built for bindings are what the real API server
// accepts (names, selectors, CEL match conditions, by Service and by URL),
// and its validation refuses a webhook name that is not a qualified name,
// which the hook's author then sees. Dry-run: nothing is registered, so no
// other test's requests go to a webhook.
func TestIntegrationConfigurationAccepted(t *testing.T) {
	c := testcluster.Get(t)
	ctx := context.Background()
	check := admission(t, "policy.sh", `
name: check.example.com
rules:
- {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE, UPDATE]}
namespace: {labelSelector: {matchLabels: {policy: "on"}}}
labelSelector: {matchExpressions: [{key: checked, operator: Exists}]}
timeoutSeconds: 5
matchConditions:
- {name: not-kube-system, expression: "request.namespace != 'kube-system'"}
`)
	caBundle := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name     string
		reg      Registration
		mutating bool
	}{
		{"validating by Service", Registration{Name: "hook-operator-test-dry-run", ServiceNamespace: "ops", ServiceName: "webhook", CABundle: caBundle}, false},
		{"mutating by URL", Registration{Name: "hook-operator-test-dry-run", URL: "https://127.0.0.1:9680", CABundle: caBundle,
			Labels: map[string]string{"app": "hook-operator"}}, true},
	} {
		u, err := tc.reg.Configuration(tc.mutating, []Admission{check})
		if err != nil {
			t.Fatal(err)
		}
		res := strings.ToLower(u.GetKind()) + "s"
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
		if _, err := c.Dynamic.Resource(gvr).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s: the API server refuses the configuration: %v", tc.name, err)
		}
	}

	bad := admission(t, "policy.sh", "name: check\nrules: []")
	u, err := Registration{Name: "hook-operator-test-dry-run", URL: "https://127.0.0.1:9680"}.Configuration(false, []Admission{bad})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	_, err = c.Dynamic.Resource(gvr).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "webhooks[0].name") {
		t.Errorf("a webhook name without dots: %v, want the API server's error naming webhooks[0].name", err)
	}
}
