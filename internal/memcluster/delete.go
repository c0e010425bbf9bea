package memcluster

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// delete deletes the object q names, as Delete does on the API server and
// the garbage collector after it (see the package documentation).
func (c *Cluster) delete(q req, opts metav1.DeleteOptions) error {
	gr := q.gr()
	e, err := c.loadHeld(q)
	if err != nil {
		return err
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != e.obj.GetUID() {
			return conflict(gr, q.name, "Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, e.obj.GetUID())
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != e.obj.GetResourceVersion() {
			return conflict(gr, q.name, "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, e.obj.GetResourceVersion())
		}
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case opts.PropagationPolicy != nil:
		policy = *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		policy = metav1.DeletePropagationOrphan
	}
	switch policy {
	case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
	default:
		return badRequest(gr, q.name, "propagationPolicy %q is not one of Background, Foreground, Orphan", policy)
	}
	c.deleteHeld(q.key(), policy, map[key]bool{})
	return nil
}

// deleteHeld deletes the held object at k. seen holds the objects this
// deletion has reached already, so that owner references in a cycle end.
func (c *Cluster) deleteHeld(k key, policy metav1.DeletionPropagation, seen map[key]bool) {
	e, ok := c.objects[k]
	if !ok || seen[k] || e.obj.GetDeletionTimestamp() != nil {
		return
	}
	seen[k] = true
	uid := e.obj.GetUID()
	switch policy {
	case metav1.DeletePropagationForeground:
		for _, d := range c.dependents(uid) {
			c.deleteHeld(d, policy, seen)
		}
	case metav1.DeletePropagationOrphan:
		c.orphan(uid)
	}
	// Deleting or orphaning the dependents rewrote them, not the owner.
	e = c.objects[k]
	if len(e.obj.GetFinalizers()) > 0 {
		o := e.obj.DeepCopy()
		now := c.timestamp()
		var grace int64
		o.SetDeletionTimestamp(&now)
		o.SetDeletionGracePeriodSeconds(&grace)
		o.SetResourceVersion(c.nextVersion())
		c.objects[k] = &entry{gvr: e.gvr, obj: o, policy: policy}
		c.record(modified, e.gvr, e.obj, o)
		return
	}
	last := e.obj.DeepCopy()
	last.SetResourceVersion(c.nextVersion())
	c.remove(k, e.gvr, e.obj, last, policy, seen)
}

// remove takes the object at k out of memory and records its deletion:
// before is the object held, last the object as it was last (with the
// resourceVersion of the deletion). policy is the deletion's; Background
// (or empty) deletes its dependents after it.
func (c *Cluster) remove(k key, gvr schema.GroupVersionResource, before, last *unstructured.Unstructured, policy metav1.DeletionPropagation, seen map[key]bool) {
	delete(c.objects, k)
	c.tombstones[k] = true
	c.record(deleted, gvr, before, last)
	if policy == "" || policy == metav1.DeletePropagationBackground {
		seen[k] = true
		for _, d := range c.dependents(last.GetUID()) {
			c.deleteHeld(d, metav1.DeletePropagationBackground, seen)
		}
	}
}

// orphan removes the owner references to uid from the objects holding
// them.
func (c *Cluster) orphan(uid types.UID) {
	for _, k := range c.dependents(uid) {
		e := c.objects[k]
		o := e.obj.DeepCopy()
		refs, _, _ := unstructured.NestedSlice(o.Object, "metadata", "ownerReferences")
		refs = slices.DeleteFunc(refs, func(r any) bool { return refUID(r) == uid })
		if len(refs) == 0 {
			unstructured.RemoveNestedField(o.Object, "metadata", "ownerReferences")
		} else {
			_ = unstructured.SetNestedSlice(o.Object, refs, "metadata", "ownerReferences")
		}
		o.SetResourceVersion(c.nextVersion())
		c.objects[k] = &entry{gvr: e.gvr, obj: o, policy: e.policy}
		c.record(modified, e.gvr, e.obj, o)
	}
}

// dependents returns the keys of the objects with an owner reference to
// uid, sorted so that garbage collection is deterministic.
func (c *Cluster) dependents(uid types.UID) []key {
	if uid == "" {
		return nil
	}
	var out []key
	for k, e := range c.objects {
		refs, _, _ := unstructured.NestedFieldNoCopy(e.obj.Object, "metadata", "ownerReferences")
		list, _ := refs.([]any)
		if slices.ContainsFunc(list, func(r any) bool { return refUID(r) == uid }) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, key.compare)
	return out
}

// deleteCollection deletes the objects List would return, one by one in
// List's order.
func (c *Cluster) deleteCollection(q req, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	list, err := c.list(q, listOpts)
	if err != nil {
		return err
	}
	for _, obj := range list.Items {
		one := req{ctx: q.ctx, gvr: q.gvr, namespace: obj.GetNamespace(), name: obj.GetName()}
		err := c.delete(one, opts)
		// An object before it in the list may have taken it along.
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// refUID returns the uid of an owner reference as held.
func refUID(ref any) types.UID {
	m, _ := ref.(map[string]any)
	uid, _ := m["uid"].(string)
	return types.UID(uid)
}
