package hook

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

// Admission and conversion bindings are parsed, checked for what a user
// could get wrong without a cluster, and kept for when they are served.

var (
	failurePolicies = []string{"Ignore", "Fail"}
	sideEffects     = []string{"None", "NoneOnDryRun"}
	operations      = []string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}
	scopes          = []string{"Cluster", "Namespaced", "*"}
	// reinvocationPolicies are the values of a mutating binding's
	// reinvocationPolicy, spelled as the API server spells them.
	reinvocationPolicies = []string{ReinvocationNever, ReinvocationIfNeeded}
)

// webhookBindings reads kubernetesValidating or kubernetesMutating.
func (c *checker) webhookBindings(top *object, key string, refs *[]snapshotRef) []WebhookBinding {
	var out []WebhookBinding
	seen := map[string]string{}
	for _, o := range top.objects(key) {
		b := WebhookBinding{Common: c.common(o, "", false, refs), Raw: plain(o.m).(map[string]any)}
		c.bindingName(o, "the webhook's name, such as policy.example.com", seen, key)
		if name, ok := o.m["name"].(string); ok && name != "" && !webhookName(name) {
			c.errorf(o.at("name"), "%q is not a webhook name: the API server wants a lowercase DNS name of at least three parts, such as policy.example.com", name)
		}
		if s, ok := o.str("failurePolicy"); ok {
			c.oneOf(o.at("failurePolicy"), s, "a failure policy", failurePolicies...)
		}
		if s, ok := o.str("sideEffects"); ok {
			c.oneOf(o.at("sideEffects"), s, "a side effects class", sideEffects...)
		}
		c.reinvocationPolicy(o, key, b.Name)
		if n, ok := o.integer("timeoutSeconds"); ok && (n < 1 || n > 30) {
			c.errorf(o.at("timeoutSeconds"), "%d is out of range; use 1 to 30 (the API server's limits)", n)
		}
		for _, m := range o.objects("matchConditions") {
			m.required("name", "the condition's name")
			m.required("expression", "a CEL expression")
			m.finish()
		}
		c.labelSelector(o, "labelSelector")
		if ns := o.object("namespace"); ns != nil {
			if !ns.has("labelSelector") {
				c.errorf(ns.at("labelSelector"), "missing; set a labelSelector for the namespaces, or remove namespace")
			}
			c.labelSelector(ns, "labelSelector")
			ns.finish()
		}
		for _, r := range o.objects("rules") {
			for _, k := range []string{"apiGroups", "apiVersions", "resources"} {
				if l, ok := r.strings(k); !ok && !r.has(k) || ok && len(l) == 0 {
					c.errorf(r.at(k), `missing or empty; list at least one (use ["*"] for all)`)
				}
			}
			ops, ok := r.strings("operations")
			if !ok && !r.has("operations") || ok && len(ops) == 0 {
				c.errorf(r.at("operations"), "missing or empty; list at least one of %s", orList(operations))
			}
			for i, op := range ops {
				c.oneOf(index(r.at("operations"), i), op, "an operation", operations...)
			}
			if s, ok := r.str("scope"); ok {
				c.oneOf(r.at("scope"), s, "a scope", scopes...)
			}
			r.finish()
		}
		o.finish()
		out = append(out, b)
	}
	return out
}

// reinvocationPolicy checks the binding's reinvocationPolicy: mutating
// bindings take Never or IfNeeded (absent leaves the API server's default,
// Never); validating bindings have none, as the API server's
// ValidatingWebhook has none.
func (c *checker) reinvocationPolicy(o *object, list, binding string) {
	const key = "reinvocationPolicy"
	if list != "kubernetesMutating" {
		if o.has(key) {
			o.get(key) // reported here, not again as an unknown key
			c.errorf(o.at(key), "binding %q: only kubernetesMutating bindings take a reinvocation policy (the API server calls a validating webhook once); remove it", binding)
		}
		return
	}
	s, ok := o.str(key)
	if !ok || slices.Contains(reinvocationPolicies, s) {
		return
	}
	hint := ""
	if q := spelling.DidYouMean(s, reinvocationPolicies); q != "" {
		hint = " (" + q + ")"
	}
	c.errorf(o.at(key), "binding %q: %q is not a reinvocation policy%s; use %s (the API server's default when the key is left out: the hook is called once per request) or %s (the hook is called again when a later mutating webhook changes the object)",
		binding, s, hint, ReinvocationNever, ReinvocationIfNeeded)
}

// webhookName reports whether name is what the API server takes as an
// admission webhook's name: a DNS subdomain with at least three labels.
func webhookName(name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0 && strings.Count(name, ".") >= 2
}

// conversionBindings reads kubernetesCustomResourceConversion.
func (c *checker) conversionBindings(top *object, refs *[]snapshotRef) []ConversionBinding {
	var out []ConversionBinding
	seen := map[string]string{}
	for _, o := range top.objects("kubernetesCustomResourceConversion") {
		b := ConversionBinding{Common: c.common(o, "", false, refs)}
		c.bindingName(o, "a name for the binding", seen, "kubernetesCustomResourceConversion")
		b.CRDName, _ = o.required("crdName", "the CustomResourceDefinition's name, such as crontabs.stable.example.com")
		convs := o.objects("conversions")
		raw, _ := o.m["conversions"].([]any)
		switch {
		case !o.has("conversions"):
			c.errorf(o.at("conversions"), "missing; list the conversions as {fromVersion, toVersion} pairs")
		case raw != nil && len(raw) == 0:
			c.errorf(o.at("conversions"), "is empty; list the conversions as {fromVersion, toVersion} pairs")
		}
		for _, cv := range convs {
			from, okFrom := cv.required("fromVersion", "the version converted from, such as stable.example.com/v1beta1")
			to, okTo := cv.required("toVersion", "the version converted to, such as stable.example.com/v1")
			cv.finish()
			if okFrom && okTo {
				b.Conversions = append(b.Conversions, ConversionRule{FromVersion: from, ToVersion: to})
			}
		}
		o.finish()
		out = append(out, b)
	}
	return out
}

// bindingName checks that the binding at o has a name (required for
// admission and conversion bindings) that no other binding in the same list
// has.
func (c *checker) bindingName(o *object, what string, seen map[string]string, list string) {
	name, isStr := o.m["name"].(string)
	switch {
	case o.has("name") && !isStr:
		// common has reported the type error.
	case name == "":
		c.errorf(o.at("name"), "missing; set it to %s", what)
	default:
		if first, dup := seen[name]; dup {
			c.errorf(o.at("name"), "%q is already used by %s; give each %s binding its own name", name, first, list)
			return
		}
		seen[name] = o.path
	}
}

// plain returns a copy of v with json.Number turned into int64 or float64,
// so that kept values read like ordinary decoded JSON.
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	default:
		return v
	}
}
