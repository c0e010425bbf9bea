package rbac

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// Why an operation is outside its hook's declared writes: the reasons of
// Outside, and the values of the reason label of the metric that counts
// them.
const (
	// ReasonKind: no write of the kind (and subresource) is declared.
	ReasonKind = "kind"
	// ReasonNamespace: the kind is declared, in other namespaces.
	ReasonNamespace = "namespace"
	// ReasonVerb: the kind is declared in the namespace, without a verb
	// the operation needs.
	ReasonVerb = "verb"
	// ReasonNoWrites: the hook declares no writes at all.
	ReasonNoWrites = "no_writes"
)

// Outside is an operation whose access its hook's declared writes do not
// grant.
type Outside struct {
	// Index is the operation's position in the file; Op describes it
	// (ops.Operation.String).
	Index int
	Op    string
	// Access is the access not granted, its kind as resolved when the
	// cluster knows it, with only the verbs that are missing.
	Access Access
	// Reason is one of the Reason constants.
	Reason string
}

// Error reads like `operation 2 (Create v1/Secret shop/x): writes
// secrets in namespace shop (create), which the hook does not declare`.
func (o Outside) Error() string {
	a := o.Access
	what := a.Kind
	if a.APIVersion != "" {
		what = a.APIVersion + " " + what
	}
	if a.Subresource != "" {
		what += "/" + a.Subresource
	}
	where := ""
	if a.Namespace != "" {
		where = " in namespace " + a.Namespace
	}
	var why string
	switch o.Reason {
	case ReasonNoWrites:
		why = "and the hook declares no writes"
	case ReasonKind:
		why = "a kind the hook does not declare"
	case ReasonNamespace:
		why = "a namespace the hook does not declare for the kind"
	default:
		why = "verbs the hook does not declare for the kind there"
	}
	return fmt.Sprintf("operation %d (%s): needs %s on %s%s, %s", o.Index, limit.Quote(o.Op), strings.Join(a.Verbs, ", "), limit.Quote(what), where, why)
}

// declared is one declared write with its kind resolved.
type declared struct {
	hook.Write
	key kindKey
}

// kindKey identifies a kind for matching: its group and resource when the
// cluster knows the kind, else its group (when the apiVersion says) and
// the name as written, lower-case (a kind whose CRD the hook's own file
// creates is not served yet when the file is checked).
type kindKey struct {
	known      bool
	apiVersion string
	kind       string
	group      string
	anyGroup   bool
	resource   string
	names      []string
	namespaced bool
}

func keyOf(r Resolver, apiVersion, kind string) kindKey {
	if res, err := r.Resolve(apiVersion, kind); err == nil {
		return kindKey{known: true, apiVersion: res.APIVersion(), kind: res.GVK.Kind, group: res.GVR.Group, resource: res.GVR.Resource, namespaced: res.Namespaced,
			names: []string{res.GVR.Resource, strings.ToLower(res.GVK.Kind), strings.ToLower(kind)}}
	}
	k := kindKey{resource: strings.ToLower(kind), names: []string{strings.ToLower(kind)}, namespaced: true, anyGroup: apiVersion == ""}
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		k.group = gv.Group
	}
	return k
}

// matches tells whether k and d are the same kind.
func (k kindKey) matches(d kindKey) bool {
	if k.known && d.known {
		return k.group == d.group && k.resource == d.resource
	}
	if !k.anyGroup && !d.anyGroup && k.group != d.group {
		return false
	}
	for _, n := range k.names {
		if slices.Contains(d.names, n) {
			return true
		}
	}
	return false
}

// Writes holds a hook's declared writes, resolved once, to check its
// operations against.
type Writes struct {
	r        Resolver
	declared []declared
	none     bool
}

// NewWrites resolves the declared writes of a hook with r. A kind the
// cluster does not know is matched by its name as written.
func NewWrites(writes []hook.Write, r Resolver) *Writes {
	w := &Writes{r: r, none: len(writes) == 0}
	for _, d := range writes {
		w.declared = append(w.declared, declared{Write: d, key: keyOf(r, d.APIVersion, d.Kind)})
	}
	return w
}

// WithReads adds to the declared writes what the hook's kubernetes
// bindings already need, as `hook-operator rbac` grants it: get, list and
// watch on each watched kind, in the namespaces the binding names (every
// namespace when it names none or selects them by label). An operation's
// read of a watched kind, such as the get of an Apply's parent, is then
// not outside. A hook that declares no writes stays one: every operation
// that needs access is still outside (ReasonNoWrites).
func (w *Writes) WithReads(bindings []hook.KubernetesBinding) *Writes {
	for _, b := range bindings {
		d := hook.Write{APIVersion: b.APIVersion, Kind: b.Kind, Verbs: []string{"get", "list", "watch"}}
		if b.Namespace != nil && b.Namespace.LabelSelector == nil {
			d.Namespaces = b.Namespace.Names
		}
		w.declared = append(w.declared, declared{Write: d, key: keyOf(w.r, d.APIVersion, d.Kind)})
	}
	return w
}

// Check returns the operations that need access the declared writes do
// not grant, in the order of the file, one Outside for each such access
// (an ApplySet may have several), and the same rules as `hook-operator
// rbac` grants by: the kind's group and resource, the subresource, the
// namespace when the write names some and the kind is namespaced, and
// every verb the operation needs (AccessOf), from one declared write or
// several. Without declared writes every operation that needs access is
// outside (ReasonNoWrites).
func (w *Writes) Check(operations []ops.Operation) []Outside {
	var out []Outside
	for _, op := range operations {
		for _, a := range AccessOf(op) {
			if a, reason := w.check(a); reason != "" {
				out = append(out, Outside{Index: op.Index, Op: op.String(), Access: a, Reason: reason})
			}
		}
	}
	return out
}

// check returns why a is not granted, or "", and a with its kind as
// resolved and only the verbs missing.
func (w *Writes) check(a Access) (Access, string) {
	key := keyOf(w.r, a.APIVersion, a.Kind)
	if key.known {
		a.APIVersion, a.Kind = key.apiVersion, key.kind
	}
	if w.none {
		return a, ReasonNoWrites
	}
	var granted []string
	kindSeen := false
	for _, d := range w.declared {
		if d.Subresource != a.Subresource || !key.matches(d.key) {
			continue
		}
		kindSeen = true
		if len(d.Namespaces) == 0 || (key.known && !key.namespaced) || slices.Contains(d.Namespaces, a.Namespace) {
			granted = append(granted, d.Verbs...)
		}
	}
	switch {
	case !kindSeen:
		return a, ReasonKind
	case len(granted) == 0:
		return a, ReasonNamespace
	}
	var missing []string
	for _, v := range a.Verbs {
		if !slices.Contains(granted, v) {
			missing = append(missing, v)
		}
	}
	a.Verbs = missing
	if len(missing) > 0 {
		return a, ReasonVerb
	}
	return a, ""
}

// Describe lists declared writes for messages, like `ConfigMap (create,
// patch) in shop; apps/v1 Deployment/scale (update)`, or "none".
func Describe(writes []hook.Write) string {
	if len(writes) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(writes))
	for _, w := range writes {
		s := w.Kind
		if w.APIVersion != "" {
			s = w.APIVersion + " " + s
		}
		if w.Subresource != "" {
			s += "/" + w.Subresource
		}
		s += " (" + strings.Join(w.Verbs, ", ") + ")"
		if len(w.Namespaces) > 0 {
			s += " in " + strings.Join(w.Namespaces, ", ")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
