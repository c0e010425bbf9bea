package hook

import (
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Label selector operators, as Kubernetes spells them.
var labelOperators = []string{
	string(metav1.LabelSelectorOpIn), string(metav1.LabelSelectorOpNotIn),
	string(metav1.LabelSelectorOpExists), string(metav1.LabelSelectorOpDoesNotExist),
}

// Field selector operators: shell-operator accepts three spellings of each.
var (
	fieldEquals    = []string{"=", "==", "Equals"}
	fieldOperators = append(append([]string{}, fieldEquals...), "!=", "NotEquals")
)

// nameSelector reads {matchNames: [...]} at key; nil when absent or wrong.
func (c *checker) nameSelector(o *object, key string) []string {
	ns := o.object(key)
	if ns == nil {
		return nil
	}
	names, ok := ns.strings("matchNames")
	switch {
	case !ns.has("matchNames"):
		c.errorf(ns.at("matchNames"), "missing; list the names to match, or remove %s", key)
	case !ok:
	case len(names) == 0:
		c.errorf(ns.at("matchNames"), "is empty, so nothing would match; list at least one name, or remove %s to match every name", key)
		names = nil
	default:
		for i, n := range names {
			if n == "" {
				c.errorf(index(ns.at("matchNames"), i), "is empty; write a name")
			}
		}
	}
	ns.finish()
	return names
}

// labelSelector reads a standard Kubernetes label selector at key and checks
// each part with the API machinery's own parser, so that what passes here
// is what the API server accepts. nil when absent.
func (c *checker) labelSelector(o *object, key string) *metav1.LabelSelector {
	ls := o.object(key)
	if ls == nil {
		return nil
	}
	sel := &metav1.LabelSelector{}
	if ml := ls.object("matchLabels"); ml != nil {
		sel.MatchLabels = map[string]string{}
		keys := make([]string, 0, len(ml.m))
		for k := range ml.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			path := member(ml.path, k)
			v, ok := c.asString(path, ml.m[k])
			if !ok {
				continue
			}
			one := &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
			if _, err := metav1.LabelSelectorAsSelector(one); err != nil {
				c.errorf(path, "%v; use a valid label name and value", err)
				continue
			}
			sel.MatchLabels[k] = v
		}
	}
	for _, e := range ls.objects("matchExpressions") {
		if req, ok := c.labelRequirement(e); ok {
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
	}
	if !ls.has("matchLabels") && !ls.has("matchExpressions") {
		c.errorf(ls.path, "is empty; set matchLabels or matchExpressions, or remove %s", key)
	}
	ls.finish()
	return sel
}

func (c *checker) labelRequirement(e *object) (metav1.LabelSelectorRequirement, bool) {
	var req metav1.LabelSelectorRequirement
	key, okKey := e.required("key", "a label name")
	op, okOp := e.required("operator", orList(labelOperators))
	values, okValues := e.strings("values")
	e.finish()
	if okOp && !c.oneOf(e.at("operator"), op, "a label selector operator", labelOperators...) {
		okOp = false
	}
	if !okKey || !okOp || (e.has("values") && !okValues) {
		return req, false
	}
	switch metav1.LabelSelectorOperator(op) {
	case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
		if len(values) == 0 {
			c.errorf(e.at("values"), "%s needs at least one value; list the values, or use Exists / DoesNotExist", op)
			return req, false
		}
	default:
		if len(values) > 0 {
			c.errorf(e.at("values"), "must be empty with %s; remove values", op)
			return req, false
		}
	}
	req = metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOperator(op), Values: values}
	one := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req}}
	if _, err := metav1.LabelSelectorAsSelector(one); err != nil {
		c.errorf(e.path, "%v; use a valid label name and values", err)
		return req, false
	}
	return req, true
}

// fieldSelector turns fieldSelector.matchExpressions into the API server's
// field selector string ("status.phase=Running,metadata.name!=x"), the
// expressions ANDed; "" when absent or wrong.
func (c *checker) fieldSelector(o *object, hasNameSelector bool) string {
	fs := o.object("fieldSelector")
	if fs == nil {
		return ""
	}
	exprs := fs.objects("matchExpressions")
	raw, _ := fs.m["matchExpressions"].([]any)
	switch {
	case !fs.has("matchExpressions"):
		c.errorf(fs.at("matchExpressions"), "missing; list expressions ({field, operator, value}), or remove fieldSelector")
	case raw != nil && len(raw) == 0:
		c.errorf(fs.at("matchExpressions"), "is empty; list expressions ({field, operator, value}), or remove fieldSelector")
	}
	fs.finish()
	before := len(c.errs)
	var terms []fields.Selector
	for _, e := range exprs {
		field, okField := e.required("field", "an object field such as metadata.name or status.phase")
		op, okOp := e.required("operator", orList(fieldOperators))
		value, okValue := e.str("value")
		if !e.has("value") && !okValue {
			c.errorf(e.at("value"), `missing; set the value to compare with ("" for an empty field)`)
		}
		e.finish()
		if okField && strings.ContainsAny(field, " ,=!\\") {
			c.errorf(e.at("field"), "%q is not a field path; write a dotted path such as status.phase", field)
			okField = false
		}
		if okField && field == "metadata.name" && hasNameSelector {
			c.errorf(e.at("field"), "metadata.name cannot be combined with nameSelector; match names with one of them, not both")
		}
		if okOp && !c.oneOf(e.at("operator"), op, "a field selector operator", fieldOperators...) {
			okOp = false
		}
		switch {
		case !okField || !okOp || !okValue:
		case slices.Contains(fieldEquals, op):
			terms = append(terms, fields.OneTermEqualSelector(field, value))
		default:
			terms = append(terms, fields.OneTermNotEqualSelector(field, value))
		}
	}
	if len(c.errs) > before || len(terms) == 0 {
		return ""
	}
	return fields.AndSelectors(terms...).String()
}

// namespace reads the binding's namespace selector; nil (all namespaces)
// when absent.
func (c *checker) namespace(o *object) *NamespaceSelector {
	ns := o.object("namespace")
	if ns == nil {
		return nil
	}
	sel := &NamespaceSelector{
		Names:         c.nameSelector(ns, "nameSelector"),
		LabelSelector: c.labelSelector(ns, "labelSelector"),
	}
	if !ns.has("nameSelector") && !ns.has("labelSelector") {
		c.errorf(ns.path, "is empty; set nameSelector.matchNames or labelSelector, or remove namespace to watch every namespace")
	}
	ns.finish()
	return sel
}
