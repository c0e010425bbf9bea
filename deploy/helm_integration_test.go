package deploy_test

import (
	"testing"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The local cluster's API server accepts the chart's rendering (server-side
// dry-run), with the default values and with the example hooks inline, in a
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := c.Namespace(t)
			restrict(t, c, ns)
			manifests := helmTemplate(t, ns, tc.args...)
			serverDryRun(t, c, manifests, len(objects(t, manifests)))
		})
	}
}
