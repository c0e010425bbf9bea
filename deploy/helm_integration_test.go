package deploy_test

import (
	"testing"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The local cluster's API server accepts the chart's rendering (server-side
// dry-run), with the default values, with the example hooks inline, and
// with secure metrics and the dashboard, in a
// namespace enforcing the restricted Pod Security Standard. helm renders
// the namespace it is given; the test gives it a fresh one that exists.
func TestIntegrationHelmServerDryRun(t *testing.T) {
	c := testcluster.Get(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"inline hooks", exampleHooksArgs(t)},
		// The monitors and the PrometheusRule need the Prometheus
		// Operator's CRDs, which the local cluster has not: the dashboard
		// and the secure metrics' RBAC, Service port and settings only.
		{"secure metrics and dashboard", []string{"--set", "metrics.secure.enabled=true", "--set", "monitoring.dashboard.enabled=true",
			"--set-json", `metrics.secure.readerSubjects=[{"kind":"ServiceAccount","name":"prom","namespace":"mon"}]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := c.Namespace(t)
			restrict(t, c, ns)
			manifests := helmTemplate(t, ns, tc.args...)
			serverDryRun(t, c, manifests, len(objects(t, manifests)))
		})
	}
}
