package hook

import (
	"slices"
	"strings"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

// Write declares one kind of write a hook's operations make (extension).
// The runtime does not enforce it; `hook-operator rbac` grants exactly the
// declared writes, so that the operator's ServiceAccount can do no more.
type Write struct {
	// APIVersion may be empty (any version of the kind's group).
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	// Subresource is "status", "scale", "finalizers" ... or empty for the
	// object itself.
	Subresource string `json:"subresource,omitempty"`
	// Verbs are Kubernetes API verbs: get, list, watch, create, update,
	// patch, delete, deletecollection.
	Verbs []string `json:"verbs"`
	// Namespaces limits the writes to these namespaces; empty means every
	// namespace (and cluster-scoped kinds).
	Namespaces []string `json:"namespaces,omitempty"`
}

// Verbs are the verbs a Write may name.
var Verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func (c *checker) writes(top *object) []Write {
	var out []Write
	for _, o := range top.objects("writes") {
		var w Write
		w.APIVersion, _ = o.str("apiVersion")
		w.Kind, _ = o.required("kind", "the kind written, such as Deployment")
		if s, ok := o.str("subresource"); ok {
			if s == "" || strings.Contains(s, "/") {
				c.errorf(o.at("subresource"), "%q: name one subresource, such as status or scale, or remove the key for the object itself", s)
			}
			w.Subresource = s
		}
		verbs, ok := o.strings("verbs")
		switch {
		case !ok && !o.has("verbs"):
			c.errorf(o.at("verbs"), "missing; list the API verbs the hook's operations need (%s); docs/bindings.md lists them per operation", strings.Join(Verbs, ", "))
		case ok && len(verbs) == 0:
			c.errorf(o.at("verbs"), "is empty; list at least one verb, or remove the entry")
		}
		for i, v := range verbs {
			if v == "*" {
				c.errorf(index(o.at("verbs"), i), `"*" grants everything; list the verbs the hook needs (%s)`, strings.Join(Verbs, ", "))
				continue
			}
			if !slices.Contains(Verbs, v) {
				hint := ""
				if q := spelling.DidYouMean(v, Verbs); q != "" {
					hint = "; " + q
				}
				c.errorf(index(o.at("verbs"), i), "%q is not an API verb%s (use %s)", v, hint, strings.Join(Verbs, ", "))
			}
		}
		w.Verbs = verbs
		if ns, ok := o.strings("namespaces"); ok {
			w.Namespaces = ns
		}
		o.finish()
		out = append(out, w)
	}
	return out
}
