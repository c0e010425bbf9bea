package memcluster

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// load returns the entry of the object q names: held, or read through and
// stored; nil when there is none.
func (c *Cluster) load(q req) (*entry, error) {
	k := q.key()
	if e, ok := c.objects[k]; ok {
		return e, nil
	}
	if c.readThrough == nil || c.tombstones[k] {
		return nil, nil
	}
	obj, err := clientFor(c.readThrough, q.gvr, q.namespace).Get(q.ctx, q.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read through %s: %w", q, err)
	}
	return c.storeRead(q.gvr, k, obj)
}

// readList stores the objects of ReadThrough's list that memory neither
// holds nor deleted.
func (c *Cluster) readList(q req, opts metav1.ListOptions) error {
	if c.readThrough == nil {
		return nil
	}
	list, err := clientFor(c.readThrough, q.gvr, q.namespace).List(q.ctx, metav1.ListOptions{
		LabelSelector: opts.LabelSelector,
		FieldSelector: opts.FieldSelector,
	})
	if err != nil {
		return fmt.Errorf("read through: list %s: %w", q.gvr.GroupResource(), err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		k := key{q.gvr.GroupResource(), obj.GetNamespace(), obj.GetName()}
		if _, held := c.objects[k]; held || c.tombstones[k] {
			continue
		}
		if _, err := c.storeRead(q.gvr, k, obj); err != nil {
			return err
		}
	}
	return nil
}

// storeRead stores an object read through, as read.
func (c *Cluster) storeRead(gvr schema.GroupVersionResource, k key, obj *unstructured.Unstructured) (*entry, error) {
	o, err := copyIn(obj)
	if err != nil {
		return nil, fmt.Errorf("read through %s %s: %w", gvr.GroupResource(), obj.GetName(), err)
	}
	c.noteVersion(o.GetResourceVersion())
	e := &entry{gvr: gvr, obj: o}
	c.objects[k] = e
	return e, nil
}

// clientFor addresses resource gvr in namespace, or cluster-wide for "".
func clientFor(d dynamic.Interface, gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	r := d.Resource(gvr)
	if namespace == "" {
		return r
	}
	return r.Namespace(namespace)
}
