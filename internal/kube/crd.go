package kube

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdVerbs are the verbs the API server serves a custom resource with.
var crdVerbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// subresourceVerbs are the verbs of a custom resource's status and scale.
var subresourceVerbs = metav1.Verbs{"get", "patch", "update"}

// ResourcesFromCRD returns the resource lists the API server would serve for
// crd, an apiextensions.k8s.io/v1 CustomResourceDefinition: one list per
// served version, holding the custom resource (plural, singular, kind,
// short names, categories, scope) and its "<plural>/status" and
// "<plural>/scale" subresources when that version declares them. Merge the
// result into BuiltinResources() with MergeResources to resolve custom kinds
// offline.
func ResourcesFromCRD(crd *unstructured.Unstructured) ([]*metav1.APIResourceList, error) {
	if crd == nil {
		return nil, fmt.Errorf("CustomResourceDefinition: no object")
	}
	if crd.GetKind() != "CustomResourceDefinition" || crd.GetAPIVersion() != "apiextensions.k8s.io/v1" {
		return nil, fmt.Errorf("object %q has apiVersion %q and kind %q; want an apiextensions.k8s.io/v1 CustomResourceDefinition",
			crd.GetName(), crd.GetAPIVersion(), crd.GetKind())
	}
	c := crdReader{obj: crd.Object, name: crd.GetName()}
	group := c.required("spec", "group")
	plural := c.required("spec", "names", "plural")
	kind := c.required("spec", "names", "kind")
	singular := c.optional("spec", "names", "singular")
	if singular == "" {
		singular = strings.ToLower(kind)
	}
	shortNames := c.strings("spec", "names", "shortNames")
	categories := c.strings("spec", "names", "categories")
	scope := c.required("spec", "scope")
	if scope != "" && scope != "Namespaced" && scope != "Cluster" {
		c.fail("spec.scope is %q; want Namespaced or Cluster", scope)
	}
	namespaced := scope == "Namespaced"
	raw, _, _ := unstructured.NestedFieldNoCopy(c.obj, "spec", "versions")
	versions, isList := raw.([]any)
	switch {
	case raw == nil || isList && len(versions) == 0:
		c.fail("spec.versions is missing")
	case !isList:
		c.fail("spec.versions is a %T, not a list", raw)
	}
	if c.err != nil {
		return nil, c.err
	}

	var lists []*metav1.APIResourceList
	for i, v := range versions {
		vc := crdReader{name: c.name, path: fmt.Sprintf("spec.versions[%d].", i)}
		var ok bool
		if vc.obj, ok = v.(map[string]any); !ok {
			return nil, fmt.Errorf("CustomResourceDefinition %q: spec.versions[%d] is a %T, not an object", c.name, i, v)
		}
		name := vc.required("name")
		served, _, err := unstructured.NestedBool(vc.obj, "served")
		if err != nil {
			vc.fail("served: %v", err)
		}
		if vc.err != nil {
			return nil, vc.err
		}
		if !served {
			continue
		}
		l := &metav1.APIResourceList{GroupVersion: group + "/" + name}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name:         plural,
			SingularName: singular,
			Namespaced:   namespaced,
			Kind:         kind,
			Verbs:        crdVerbs,
			ShortNames:   shortNames,
			Categories:   categories,
		})
		if vc.has("subresources", "status") {
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: plural + "/status", Namespaced: namespaced, Kind: kind, Verbs: subresourceVerbs,
			})
		}
		if vc.has("subresources", "scale") {
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: plural + "/scale", Namespaced: namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: subresourceVerbs,
			})
		}
		lists = append(lists, l.DeepCopy())
	}
	return lists, nil
}

// crdReader reads fields of a CRD (or of one of its versions, under path)
// and keeps the first error, which names the field.
type crdReader struct {
	obj  map[string]any
	name string
	path string
	err  error
}

func (c *crdReader) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("CustomResourceDefinition %q: %s", c.name, fmt.Sprintf(format, args...))
	}
}

func (c *crdReader) field(fields []string) string { return c.path + strings.Join(fields, ".") }

func (c *crdReader) optional(fields ...string) string {
	s, _, err := unstructured.NestedString(c.obj, fields...)
	if err != nil {
		c.fail("%s: %v", c.field(fields), err)
	}
	return s
}

func (c *crdReader) required(fields ...string) string {
	s := c.optional(fields...)
	if s == "" {
		c.fail("%s is missing", c.field(fields))
	}
	return s
}

func (c *crdReader) strings(fields ...string) []string {
	s, _, err := unstructured.NestedStringSlice(c.obj, fields...)
	if err != nil {
		c.fail("%s: %v", c.field(fields), err)
	}
	return s
}

func (c *crdReader) has(fields ...string) bool {
	_, found, err := unstructured.NestedFieldNoCopy(c.obj, fields...)
	return found && err == nil
}
