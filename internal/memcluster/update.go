package memcluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// update replaces the object q names with o, a copy the caller gave up,
// through subresource sub ("", "status" or "scale").
func (c *Cluster) update(q req, o *unstructured.Unstructured, sub string) (*unstructured.Unstructured, error) {
	if sub == "scale" {
		// A Scale is not the object: its namespace and kind are its own.
		e, err := c.loadHeld(q)
		if err != nil {
			return nil, err
		}
		return c.writeScale(q, e, o)
	}
	if err := place(q, o); err != nil {
		return nil, err
	}
	e, err := c.loadHeld(q)
	if err != nil {
		return nil, err
	}
	switch sub {
	case "", "status":
		return c.write(q, e, o, sub)
	}
	return nil, noSubresource(q.gr(), sub, q.name)
}

// loadHeld is load, with NotFound for an object there is not.
func (c *Cluster) loadHeld(q req) (*entry, error) {
	e, err := c.load(q)
	if err == nil && e == nil {
		err = notFound(q.gr(), q.name)
	}
	return e, err
}

// write makes next (a copy the caller gave up, placed by place) the new
// state of the object held in e, as a write through subresource sub (""
// or "status") would: the checks of optimistic concurrency, the fields the
// server keeps, generation, resourceVersion, and the end of a deletion
// when the write leaves no finalizers. A write that changes nothing
// returns the object as held and records nothing.
func (c *Cluster) write(q req, e *entry, next *unstructured.Unstructured, sub string) (*unstructured.Unstructured, error) {
	cur := e.obj
	gr := q.gr()
	if rv := next.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return nil, staleVersion(gr, q.name)
	}
	if uid := next.GetUID(); uid != "" && uid != cur.GetUID() {
		return nil, conflict(gr, q.name, "Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, cur.GetUID())
	}
	o := next
	if sub == "status" {
		o = cur.DeepCopy()
		if status, found := next.Object["status"]; found {
			o.Object["status"] = status
		} else {
			delete(o.Object, "status")
		}
	} else {
		keepServerFields(cur, o)
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	setGeneration(cur, o)
	if sameJSON(cur.Object, o.Object) {
		return cur.DeepCopy(), nil
	}
	o.SetResourceVersion(c.nextVersion())
	if o.GetDeletionTimestamp() != nil && len(o.GetFinalizers()) == 0 {
		// The API server deletes the object in the same step: one Deleted,
		// no Modified.
		c.remove(q.key(), q.gvr, cur, o, e.policy, map[key]bool{})
		return o.DeepCopy(), nil
	}
	c.objects[q.key()] = &entry{gvr: q.gvr, obj: o, policy: e.policy}
	c.record(modified, q.gvr, cur, o)
	return o.DeepCopy(), nil
}
