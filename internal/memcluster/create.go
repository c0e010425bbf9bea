package memcluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// create stores o, a copy the caller gave up, as a new object. q.name is
// empty for Create (the name comes from o) and the name on the request for
// an apply that creates.
func (c *Cluster) create(q req, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gr := q.gr()
	if o.GetAPIVersion() == "" || o.GetKind() == "" {
		return nil, badRequest(gr, o.GetName(), "apiVersion and kind are required to create an object")
	}
	if err := place(q, o); err != nil {
		return nil, err
	}
	if o.GetResourceVersion() != "" {
		return nil, badRequest(gr, o.GetName(), "resourceVersion should not be set on objects to be created")
	}
	if o.GetName() == "" {
		if o.GetGenerateName() == "" {
			return nil, invalid(gr, "", "metadata.name: Required value: name or generateName is required")
		}
		// Skip generated names that are taken, as the API server's retry
		// would.
		for {
			q.name = c.generateName(o.GetGenerateName())
			e, err := c.load(q)
			if err != nil {
				return nil, err
			}
			if e == nil {
				break
			}
		}
		o.SetName(q.name)
	}
	q.name = o.GetName()
	e, err := c.load(q)
	if err != nil {
		return nil, err
	}
	if e != nil {
		return nil, alreadyExists(gr, q.name)
	}
	o.SetUID(c.newUID())
	o.SetCreationTimestamp(c.timestamp())
	if hasGeneration(q.gvr, o) {
		o.SetGeneration(1)
	} else {
		unstructured.RemoveNestedField(o.Object, "metadata", "generation")
	}
	o.SetDeletionTimestamp(nil)
	o.SetDeletionGracePeriodSeconds(nil)
	o.SetResourceVersion(c.nextVersion())
	c.objects[q.key()] = &entry{gvr: q.gvr, obj: o}
	c.record(added, q.gvr, nil, o)
	return o.DeepCopy(), nil
}

// place checks that o may be written by request q: its namespace is the
// request's (or empty, and then set to it), and its name the request's (or
// empty, and then set to it) when the request names an object.
func place(q req, o *unstructured.Unstructured) error {
	gr := q.gr()
	ns := o.GetNamespace()
	switch {
	case q.namespace == "" && ns != "":
		return badRequest(gr, o.GetName(), "the object is in namespace %q, but the request is cluster-wide: write namespaced objects through Namespace(%q)", ns, ns)
	case ns != "" && ns != q.namespace:
		return badRequest(gr, o.GetName(), "the namespace of the object (%s) does not match the namespace on the request (%s)", ns, q.namespace)
	}
	o.SetNamespace(q.namespace)
	if q.name == "" {
		return nil
	}
	if name := o.GetName(); name != "" && name != q.name {
		return badRequest(gr, q.name, "the name of the object (%s) does not match the name on the request (%s)", name, q.name)
	}
	o.SetName(q.name)
	return nil
}
