package memcluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// scaleOf returns the autoscaling/v1 Scale of obj: its spec.replicas and
// status.replicas (0 when absent; no selector).
func scaleOf(obj *unstructured.Unstructured) *unstructured.Unstructured {
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	current, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas")
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v1",
		"kind":       "Scale",
		"spec":       map[string]any{"replicas": replicas},
		"status":     map[string]any{"replicas": current},
	}}
	s.SetName(obj.GetName())
	s.SetNamespace(obj.GetNamespace())
	s.SetUID(obj.GetUID())
	s.SetResourceVersion(obj.GetResourceVersion())
	s.SetCreationTimestamp(obj.GetCreationTimestamp())
	return s
}

// writeScale takes spec.replicas of scale, an autoscaling/v1 Scale, into
// the object held in e, and returns the object's Scale after.
func (c *Cluster) writeScale(q req, e *entry, scale *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	replicas, found, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil || !found {
		return nil, invalid(q.gr(), q.name, "spec.replicas: Required value: a Scale needs an integer spec.replicas")
	}
	if name := scale.GetName(); name != "" && name != q.name {
		return nil, badRequest(q.gr(), q.name, "the name of the Scale (%s) does not match the name on the request (%s)", name, q.name)
	}
	next := e.obj.DeepCopy()
	if err := unstructured.SetNestedField(next.Object, replicas, "spec", "replicas"); err != nil {
		return nil, invalid(q.gr(), q.name, "spec.replicas: %v", err)
	}
	// The Scale's resourceVersion is the object's: it makes the write
	// conditional the same way.
	next.SetResourceVersion(scale.GetResourceVersion())
	written, err := c.write(q, e, next, "")
	if err != nil {
		return nil, err
	}
	return scaleOf(written), nil
}
