package rbac

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/rbac"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// chartGrantOptions are the grant options of -o values: the chart's
// webhook.configurationMode unless given, and neither certificate Secret
// nor Lease, which the chart grants by itself.
func chartGrantOptions(f Flags) rbac.GrantOptions {
	mode := f.WebhookConfigurationMode
	if mode == "" {
		mode = webhook.ModeExisting // the chart's default
	}
	return rbac.GrantOptions{WebhookConfigurationName: f.WebhookConfigurationName, WebhookConfigurationMode: mode, Sharding: f.Sharding}
}

// printValues prints the chart's values for the hooks, with a header saying
// what needs each rule, which grants are sensitive, and what the chart
// grants by itself.
func printValues(out io.Writer, f Flags, hooks []*hook.Hook, grants []rbac.Grant) error {
	values := rbac.Chart(hooks, grants, rbac.ChartOptions{WebhookConfigurationName: f.WebhookConfigurationName,
		WebhookConfigurationMode: f.WebhookConfigurationMode, Sharding: f.Sharding})
	data, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# Values of the hook-operator Helm chart for the hooks in %s, written by\n", f.HooksDir)
	fmt.Fprintln(out, "# `hook-operator rbac -o values`, for `helm install -f` (`-f -` from a pipe).")
	fmt.Fprintln(out, "# What needs what (rbac.extraRules: cluster-wide; rbac.namespaceRules: in a namespace):")
	for _, g := range grants {
		if !rbac.ChartGrants(g.Need) {
			fmt.Fprintf(out, "#   %s\n", describe(g))
		}
	}
	fmt.Fprintln(out, "# The chart grants the rest by itself, from its own values: Events about failed")
	fmt.Fprintln(out, "# runs; with webhook.enabled, the webhook configurations; with")
	fmt.Fprintln(out, "# webhook.certificates=selfSigned, the certificate's Secret; with")
	fmt.Fprintln(out, "# leaderElection.enabled and sharding.enabled, the Leases.")
	if values.Webhook != nil {
		fmt.Fprintln(out, "# webhook.enabled: the chart renders once you also name the API server's client CA")
		fmt.Fprintln(out, "# (webhook.clientCA.configMap or .secret) or set webhook.clientCA.enabled=false;")
		fmt.Fprintln(out, "# see docs/deploy.md, \"Who may call the webhooks\".")
	}
	for _, g := range grants {
		if line := sensitive(g); line != "" && !rbac.ChartGrants(g.Need) {
			if g.Namespace != "" {
				line += " (in " + g.Namespace + ")"
			}
			fmt.Fprintln(out, line)
		}
	}
	_, err = out.Write(data)
	return err
}
