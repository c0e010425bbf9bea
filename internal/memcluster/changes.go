package memcluster

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The types of Change, as watch events name them.
const (
	added    = "Added"
	modified = "Modified"
	deleted  = "Deleted"
)

// Change is one write as a watch would report it.
type Change struct {
	// Type is "Added", "Modified" or "Deleted".
	Type string
	// Resource is the resource the object was written under (for objects
	// deleted by garbage collection: last written under).
	Resource schema.GroupVersionResource
	// Old is the object before the write; nil for Added.
	Old *unstructured.Unstructured
	// New is the object after the write; for Deleted, the object as it was
	// last, with the resourceVersion of its deletion.
	New *unstructured.Unstructured
}

// record remembers a change. The objects are the ones held, never changed
// in place, so they need no copy until TakeChanges hands them out.
func (c *Cluster) record(typ string, gvr schema.GroupVersionResource, before, after *unstructured.Unstructured) {
	c.changes = append(c.changes, Change{Type: typ, Resource: gvr, Old: before, New: after})
}

// TakeChanges returns the changes recorded since the last call, in the
// order they happened, and forgets them. The objects are the caller's.
func (c *Cluster) TakeChanges() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.changes
	c.changes = nil
	for i := range out {
		if out[i].Old != nil {
			out[i].Old = out[i].Old.DeepCopy()
		}
		out[i].New = out[i].New.DeepCopy()
	}
	return out
}
