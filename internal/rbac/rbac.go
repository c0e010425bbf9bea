// Package rbac derives the least-privilege RBAC of an operator from its
// hooks: read access (get, list, watch) to what the kubernetes bindings
// watch, the writes each hook declares under `writes`, and what the runtime
// itself needs (finalizers, Events). Rules never use "*": every verb and
// resource is named.
package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// Resolver resolves kinds: a live *kube.Resolver, or an offline one.
type Resolver interface {
	Resolve(apiVersion, kind string) (kube.Resource, error)
}

// Options name the generated objects.
type Options struct {
	// Name names the ClusterRole, the Roles and their bindings.
	Name string
	// ServiceAccount and Namespace are the subject of the bindings.
	ServiceAccount, Namespace string
}

// Grant is one permission: verbs on a resource (or a subresource,
// "deployments/scale"), cluster-wide (Namespace "") or in one namespace.
type Grant struct {
	Group, Resource, Namespace string
	Verbs                      []string
	// ResourceNames limits the grant to objects of these names.
	ResourceNames []string
	// Why says which binding or declared write needs it.
	Why string
	// Need says what in the operator it serves.
	Need Need
}

// Need is what in the operator a grant serves: the hooks' objects, or one
// of the operator's own needs. A deployment that grants some of these by
// itself (the Helm chart, from its own values) can leave them out.
type Need string

const (
	// NeedHooks: what the hooks' bindings watch, their finalizers and
	// declared writes, the CRDs their conversion bindings register in, and
	// the Namespaces their namespace.labelSelector watches.
	NeedHooks Need = ""
	// NeedEvents: the Events about failed runs.
	NeedEvents Need = "events"
	// NeedWebhookConfigurations: registering the admission bindings in
	// the webhook configurations.
	NeedWebhookConfigurations Need = "webhook configurations"
	// NeedWebhookCertificate: the Secret of --webhook-self-signed.
	NeedWebhookCertificate Need = "webhook certificate"
	// NeedLeases: the Leases of --leader-elect and --sharding.
	NeedLeases Need = "leases"
)

// GrantOptions are the settings of `start` that the grants depend on.
type GrantOptions struct {
	// WebhookConfigurationName is start's --webhook-configuration-name;
	// "" is its default.
	WebhookConfigurationName string
	// WebhookConfigurationMode is start's --webhook-configuration-mode:
	// webhook.ModeManaged ("" too) or webhook.ModeExisting, which needs
	// no create and no delete.
	WebhookConfigurationMode string
	// WebhookCertSecret names the Secret of --webhook-self-signed in
	// OperatorNamespace; "" when the certificates are mounted.
	WebhookCertSecret, OperatorNamespace string
	// LeaseName names the Lease of --leader-elect in OperatorNamespace;
	// "" without leader election.
	LeaseName string
	// Sharding: start runs with --sharding, whose members hold a Lease
	// each (names made from their identities) beside the leader's.
	Sharding bool
}

// Grants returns what the hooks need, one grant per need, in the order of
// the hooks and their bindings.
func Grants(hooks []*hook.Hook, r Resolver, opts GrantOptions) ([]Grant, error) {
	var out []Grant
	var errs []string
	add := func(res kube.Resource, sub string, namespaces []string, verbs []string, why string) {
		resource := res.GVR.Resource
		if sub != "" {
			resource += "/" + sub
		}
		if !res.Namespaced || len(namespaces) == 0 {
			namespaces = []string{""}
		}
		for _, ns := range namespaces {
			out = append(out, Grant{Group: res.GVR.Group, Resource: resource, Namespace: ns, Verbs: verbs, Why: why})
		}
	}
	watchesNamespaces := false
	for _, h := range hooks {
		for _, b := range h.Config.Kubernetes {
			res, err := r.Resolve(b.APIVersion, b.Kind)
			if err != nil {
				errs = append(errs, fmt.Sprintf("hook %s: binding %q: %v", h.Name, b.Name, err))
				continue
			}
			var namespaces []string
			if sel := b.Namespace; sel != nil {
				if sel.LabelSelector != nil {
					watchesNamespaces = true // any namespace may come to match
				} else {
					namespaces = sel.Names
				}
			}
			why := fmt.Sprintf("%s: binding %s", h.Name, b.Name)
			add(res, "", namespaces, []string{"get", "list", "watch"}, why)
			if b.Finalizer != "" {
				add(res, "", namespaces, []string{"update"}, why+" (finalizer)")
			}
		}
		for i, w := range h.Config.Writes {
			res, err := r.Resolve(w.APIVersion, w.Kind)
			if err != nil {
				errs = append(errs, fmt.Sprintf("hook %s: writes[%d]: %v", h.Name, i, err))
				continue
			}
			add(res, w.Subresource, w.Namespaces, w.Verbs, fmt.Sprintf("%s: writes[%d]", h.Name, i))
		}
	}
	out = append(out, webhookConfigurationGrants(hooks, opts)...)
	if crds, _ := conversionCRDs(hooks); opts.WebhookCertSecret != "" && (len(crds) > 0 || admissionBindings(hooks) != "") {
		why := "--webhook-self-signed: the webhook certificate Secret"
		// create cannot be limited to a name; get and update are.
		out = append(out, Grant{Resource: "secrets", Namespace: opts.OperatorNamespace, Verbs: []string{"create"}, Why: why, Need: NeedWebhookCertificate},
			Grant{Resource: "secrets", Namespace: opts.OperatorNamespace, Verbs: []string{"get", "update"}, ResourceNames: []string{opts.WebhookCertSecret}, Why: why, Need: NeedWebhookCertificate})
	}
	if opts.LeaseName != "" {
		why := "--leader-elect: the leader election's Lease"
		// create cannot be limited to a name; get and update are, and so
		// are list and watch with the field selector metadata.name (a
		// standby watches the Lease to see it released).
		out = append(out, Grant{Group: "coordination.k8s.io", Resource: "leases", Namespace: opts.OperatorNamespace, Verbs: []string{"create"}, Why: why, Need: NeedLeases},
			Grant{Group: "coordination.k8s.io", Resource: "leases", Namespace: opts.OperatorNamespace, Verbs: []string{"get", "list", "watch", "update"}, ResourceNames: []string{opts.LeaseName}, Why: why, Need: NeedLeases})
	}
	if opts.Sharding {
		// Members' Lease names come from their identities, unknown here,
		// and members list and watch the ring's Leases by label: none of
		// it can be limited to names. Delete removes the Leases of
		// members gone for good.
		out = append(out, Grant{Group: "coordination.k8s.io", Resource: "leases", Namespace: opts.OperatorNamespace,
			Verbs: []string{"get", "list", "watch", "create", "update", "delete"}, Why: "--sharding: the members' Leases of the sharding ring", Need: NeedLeases})
	}
	if crds, who := conversionCRDs(hooks); len(crds) > 0 {
		const group, res = "apiextensions.k8s.io", "customresourcedefinitions"
		why := who + ": registering the conversion webhooks in the CRDs"
		out = append(out, Grant{Group: group, Resource: res, Verbs: []string{"get", "patch"}, ResourceNames: crds, Why: why},
			Grant{Group: group, Resource: res, Verbs: []string{"list"}, Why: "finding the CRDs whose conversion a removed binding had registered"})
	}
	if watchesNamespaces {
		out = append(out, Grant{Resource: "namespaces", Verbs: []string{"get", "list", "watch"}, Why: "namespace.labelSelector"})
	}
	// Events about failed runs, in the namespaces of the objects.
	out = append(out, Grant{Group: "", Resource: "events", Verbs: []string{"create", "patch"}, Why: "Events about failed runs", Need: NeedEvents})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s\n(install the CRDs, or pass their files with --crds)", strings.Join(errs, "\n"))
	}
	return out, nil
}

// conversionCRDs returns the CRDs the hooks' conversion bindings name,
// sorted, and the first hook with one.
func conversionCRDs(hooks []*hook.Hook) ([]string, string) {
	var crds []string
	who := ""
	for _, h := range hooks {
		for _, b := range h.Config.Conversion {
			if who == "" {
				who = h.Name
			}
			if !slices.Contains(crds, b.CRDName) {
				crds = append(crds, b.CRDName)
			}
		}
	}
	slices.Sort(crds)
	return crds, who
}

// admissionBindings names the first hook with an admission binding, or "".
func admissionBindings(hooks []*hook.Hook) string {
	for _, h := range hooks {
		if len(h.Config.Validating)+len(h.Config.Mutating) > 0 {
			return h.Name
		}
	}
	return ""
}

// webhookConfigurationGrants are the grants on the webhook configurations
// of the kinds the hooks use, and no other: a folder with only validating
// bindings gets nothing on MutatingWebhookConfigurations. Everything but
// create is limited to the configuration's name; create cannot be, so in
// webhook.ModeManaged it lets the operator create any configuration of
// the kind (Sensitive flags it), and webhook.ModeExisting, where the
// configurations are made beforehand, needs neither create nor delete.
func webhookConfigurationGrants(hooks []*hook.Hook, opts GrantOptions) []Grant {
	name := opts.WebhookConfigurationName
	if name == "" {
		name = webhook.DefaultConfigurationName
	}
	const group = "admissionregistration.k8s.io"
	var out []Grant
	for _, kind := range []struct {
		resource, list string
		bindings       func(*hook.Hook) int
	}{
		{"validatingwebhookconfigurations", "kubernetesValidating", func(h *hook.Hook) int { return len(h.Config.Validating) }},
		{"mutatingwebhookconfigurations", "kubernetesMutating", func(h *hook.Hook) int { return len(h.Config.Mutating) }},
	} {
		i := slices.IndexFunc(hooks, func(h *hook.Hook) bool { return kind.bindings(h) > 0 })
		if i < 0 {
			continue
		}
		why := fmt.Sprintf("%s: %s bindings, registered in the %s", hooks[i].Name, kind.list, kind.resource)
		if opts.WebhookConfigurationMode == webhook.ModeExisting {
			out = append(out, Grant{Group: group, Resource: kind.resource, Verbs: []string{"get", "patch"}, ResourceNames: []string{name},
				Why: why + " made beforehand (--webhook-configuration-mode=existing)", Need: NeedWebhookConfigurations})
			continue
		}
		out = append(out, Grant{Group: group, Resource: kind.resource, Verbs: []string{"create"}, Why: why + " (create cannot be limited to a name; --webhook-configuration-mode=existing needs none)", Need: NeedWebhookConfigurations},
			Grant{Group: group, Resource: kind.resource, Verbs: []string{"get", "patch", "delete"}, ResourceNames: []string{name}, Why: why, Need: NeedWebhookConfigurations})
	}
	return out
}

// Objects turns grants into a ClusterRole with its ClusterRoleBinding for
// the cluster-wide grants and a Role with its RoleBinding per namespace.
// Rules are merged and sorted, so the output is stable.
func Objects(grants []Grant, opts Options) []any {
	byNS := map[string][]Grant{}
	for _, g := range grants {
		byNS[g.Namespace] = append(byNS[g.Namespace], g)
	}
	subject := []Subject{{Kind: serviceAccountKind, Name: opts.ServiceAccount, Namespace: opts.Namespace}}
	var out []any
	if gs := byNS[""]; len(gs) > 0 {
		out = append(out,
			&ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: opts.Name},
				Rules:      rules(gs),
			},
			&ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: opts.Name},
				RoleRef:    RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: opts.Name},
				Subjects:   subject,
			})
	}
	var namespaces []string
	for ns := range byNS {
		if ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		out = append(out,
			&Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: ns},
				Rules:      rules(byNS[ns]),
			},
			&RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: ns},
				RoleRef:    RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: opts.Name},
				Subjects:   subject,
			})
	}
	return out
}

// rules merges grants: the verbs of each resource are joined, then
// resources of one group with the same verbs share a rule.
func rules(grants []Grant) []PolicyRule {
	type key struct{ group, resource, names string }
	verbs := map[key][]string{}
	for _, g := range grants {
		k := key{g.Group, g.Resource, strings.Join(g.ResourceNames, ",")}
		for _, v := range g.Verbs {
			if !slices.Contains(verbs[k], v) {
				verbs[k] = append(verbs[k], v)
			}
		}
	}
	type merged struct {
		group, names string
		verbs        []string
		resources    []string
	}
	byVerbs := map[string]*merged{}
	for k, vs := range verbs {
		vs = sortVerbs(vs)
		id := k.group + "\x00" + k.names + "\x00" + strings.Join(vs, ",")
		m := byVerbs[id]
		if m == nil {
			m = &merged{group: k.group, names: k.names, verbs: vs}
			byVerbs[id] = m
		}
		m.resources = append(m.resources, k.resource)
	}
	var out []PolicyRule
	for _, m := range byVerbs {
		sort.Strings(m.resources)
		rule := PolicyRule{APIGroups: []string{m.group}, Resources: m.resources, Verbs: m.verbs}
		if m.names != "" {
			rule.ResourceNames = strings.Split(m.names, ",")
		}
		out = append(out, rule)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.APIGroups[0] != b.APIGroups[0] {
			return a.APIGroups[0] < b.APIGroups[0]
		}
		if ra, rb := strings.Join(a.Resources, ","), strings.Join(b.Resources, ","); ra != rb {
			return ra < rb
		}
		return strings.Join(a.ResourceNames, ",") < strings.Join(b.ResourceNames, ",")
	})
	return out
}

// sortVerbs orders verbs as hook.Verbs lists them.
func sortVerbs(vs []string) []string {
	out := slices.Clone(vs)
	sort.Slice(out, func(i, j int) bool { return slices.Index(hook.Verbs, out[i]) < slices.Index(hook.Verbs, out[j]) })
	return out
}
