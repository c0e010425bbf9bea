package memcluster

import (
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// selectableFields are the fields a field selector may name: those every
// resource has.
var selectableFields = []string{"metadata.name", "metadata.namespace"}

// list lists the objects of q's resource in q's namespace ("" for all)
// that opts selects, after merging in those read through.
func (c *Cluster) list(q req, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	gr := q.gr()
	labelSel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, badRequest(gr, "", "labelSelector: %v", err)
	}
	fieldSel, err := fieldSelector(gr, opts.FieldSelector)
	if err != nil {
		return nil, err
	}
	if err := c.readList(q, opts); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": q.gvr.GroupVersion().String(),
		"kind":       "List",
	}}
	for _, e := range c.held(gr, q.namespace) {
		o := e.obj
		if !labelSel.Matches(labels.Set(o.GetLabels())) ||
			!fieldSel.Matches(fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}) {
			continue
		}
		if len(list.Items) == 0 && o.GetKind() != "" {
			list.SetKind(o.GetKind() + "List")
		}
		list.Items = append(list.Items, *o.DeepCopy())
	}
	list.SetResourceVersion(strconv.FormatUint(c.version, 10))
	return list, nil
}

// fieldSelector parses a field selector on the fields memcluster can
// select on.
func fieldSelector(gr schema.GroupResource, s string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, badRequest(gr, "", "fieldSelector: %v", err)
	}
	for _, r := range sel.Requirements() {
		if !slices.Contains(selectableFields, r.Field) {
			return nil, badRequest(gr, "", "fieldSelector: field label not supported: %s (memcluster selects on %s only)", r.Field, strings.Join(selectableFields, " and "))
		}
	}
	return sel, nil
}
