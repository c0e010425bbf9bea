package rbac

import (
	"github.com/hook-operator/hook-operator/internal/hook"
)

// Values are values of the hook-operator Helm chart (deploy/helm/hook-operator)
// that give a hooks folder what it needs: `helm install -f` takes them as
// they are. The chart names and binds the roles itself (after the release),
// so the values carry rules, not objects.
type Values struct {
	RBAC ValuesRBAC `json:"rbac"`
	// Webhook is set when the hooks have admission or conversion bindings.
	Webhook *ValuesWebhook `json:"webhook,omitempty"`
	// Sharding is set with ChartOptions.Sharding.
	Sharding *ValuesSharding `json:"sharding,omitempty"`
}

// ValuesRBAC is the chart's rbac: the ClusterRole's extraRules, and the
// rules of a Role in each namespace.
type ValuesRBAC struct {
	ExtraRules     []PolicyRule            `json:"extraRules"`
	NamespaceRules map[string][]PolicyRule `json:"namespaceRules"`
}

// ValuesWebhook is the chart's webhook; the fields left empty keep the
// chart's defaults.
type ValuesWebhook struct {
	Enabled           bool   `json:"enabled"`
	ConfigurationName string `json:"configurationName,omitempty"`
	ConfigurationMode string `json:"configurationMode,omitempty"`
}

// ValuesSharding is the chart's sharding.
type ValuesSharding struct {
	Enabled bool `json:"enabled"`
}

// ChartOptions are the settings given for the chart; empty ones keep the
// chart's defaults.
type ChartOptions struct {
	// WebhookConfigurationName and WebhookConfigurationMode become
	// webhook.configurationName and webhook.configurationMode.
	WebhookConfigurationName, WebhookConfigurationMode string
	// Sharding becomes sharding.enabled.
	Sharding bool
}

// ChartGrants says, of each need, whether the chart grants it by itself,
// from its own values (templates/*.yaml), so that the values need not:
//
//   - NeedEvents: the ClusterRole always has Events (rbac.yaml);
//   - NeedWebhookConfigurations: with webhook.enabled, which Chart sets for
//     hooks with admission bindings, get and patch on
//     webhook.configurationName, or in managed mode create too (rbac.yaml);
//   - NeedWebhookCertificate: with webhook.certificates=selfSigned, a Role
//     for its Secret (webhook.yaml);
//   - NeedLeases: with leaderElection.enabled, a Role for its Lease and,
//     with sharding.enabled, the ring's (leader.yaml).
//
// What the hooks' objects need (NeedHooks) is the chart's to be told.
func ChartGrants(n Need) bool {
	switch n {
	case NeedEvents, NeedWebhookConfigurations, NeedWebhookCertificate, NeedLeases:
		return true
	}
	return false
}

// Chart returns the chart's values for hooks whose grants are grants: the
// grants the chart does not make by itself (ChartGrants) as rules, merged
// as Objects merges them (cluster-wide ones into rbac.extraRules, those of
// a namespace into rbac.namespaceRules), webhook.enabled for admission or
// conversion bindings, and the settings of opts.
func Chart(hooks []*hook.Hook, grants []Grant, opts ChartOptions) Values {
	byNS := map[string][]Grant{}
	for _, g := range grants {
		if !ChartGrants(g.Need) {
			byNS[g.Namespace] = append(byNS[g.Namespace], g)
		}
	}
	v := Values{RBAC: ValuesRBAC{ExtraRules: []PolicyRule{}, NamespaceRules: map[string][]PolicyRule{}}}
	for ns, gs := range byNS {
		if ns == "" {
			v.RBAC.ExtraRules = rules(gs)
		} else {
			v.RBAC.NamespaceRules[ns] = rules(gs)
		}
	}
	if crds, _ := conversionCRDs(hooks); len(crds) > 0 || admissionBindings(hooks) != "" {
		v.Webhook = &ValuesWebhook{Enabled: true, ConfigurationName: opts.WebhookConfigurationName, ConfigurationMode: opts.WebhookConfigurationMode}
	}
	if opts.Sharding {
		v.Sharding = &ValuesSharding{Enabled: true}
	}
	return v
}
