package memcluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
)

// Cluster holds objects in memory and serves them through dynamic.Interface
// (see Resource). It is safe for concurrent use.
type Cluster struct {
	now         func() time.Time
	readThrough dynamic.Interface

	// mu guards everything below, for the whole of each call, read-through
	// included, so that every call sees and leaves a consistent state.
	mu      sync.Mutex
	objects map[key]*entry
	// tombstones are the objects deleted in memory: never read through
	// again, as the cluster behind is not told of the deletion.
	tombstones map[key]bool
	// version is the last resourceVersion given; uids and names count the
	// uids and generated names given.
	version, uids, names uint64
	changes              []Change
}

// Options configures a Cluster.
type Options struct {
	// Now is the clock for creationTimestamp and deletionTimestamp;
	// time.Now when nil. Replay passes a virtual clock.
	Now func() time.Time
	// ReadThrough, when set, is asked for the objects memory does not hold:
	// a Get (or a write) of an object not held asks it for the object, and
	// List merges in its list. Objects read through are stored as read
	// (their uid and resourceVersion kept) and no change is recorded; from
	// then on memory's copy is the object. Objects deleted in memory are
	// never read through again. Client-side dry-run reads the live cluster
	// this way. It must not be the Cluster itself.
	ReadThrough dynamic.Interface
}

// key identifies an object. It holds no version: the same object may be
// asked for under two versions.
type key struct {
	resource        schema.GroupResource
	namespace, name string
}

func (k key) compare(o key) int {
	return cmp.Or(
		cmp.Compare(k.resource.Group, o.resource.Group),
		cmp.Compare(k.resource.Resource, o.resource.Resource),
		cmp.Compare(k.namespace, o.namespace),
		cmp.Compare(k.name, o.name),
	)
}

// entry is one object held.
type entry struct {
	// gvr is the resource the object was last written under.
	gvr schema.GroupVersionResource
	// obj is never changed in place: each write stores a new object, so
	// that the changes recorded can share it.
	obj *unstructured.Unstructured
	// policy is the propagation policy of the Delete that started the
	// object's deletion; empty means Background.
	policy metav1.DeletionPropagation
}

// New returns an empty cluster.
func New(opts Options) *Cluster {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Cluster{
		now:         now,
		readThrough: opts.ReadThrough,
		objects:     map[key]*entry{},
		tombstones:  map[key]bool{},
	}
}

// Add stores obj as given (a fixture object) under resource gvr without
// recording a change; it assigns uid, resourceVersion, creationTimestamp
// and generation (1, for kinds that have one; see hasGeneration) when missing. It replaces an object with the same
// identity. An object with a namespace is namespaced.
func (c *Cluster) Add(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	if obj == nil {
		return fmt.Errorf("add %s: the object is nil", gvr.GroupResource())
	}
	o, err := copyIn(obj)
	if err != nil {
		return fmt.Errorf("add %s %s: %w", gvr.GroupResource(), obj.GetName(), err)
	}
	if o.GetName() == "" {
		return fmt.Errorf("add %s: metadata.name is required", gvr.GroupResource())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.GetUID() == "" {
		o.SetUID(c.newUID())
	}
	if rv := o.GetResourceVersion(); rv == "" {
		o.SetResourceVersion(c.nextVersion())
	} else {
		c.noteVersion(rv)
	}
	if ts := o.GetCreationTimestamp(); ts.IsZero() {
		o.SetCreationTimestamp(c.timestamp())
	}
	if o.GetGeneration() == 0 && hasGeneration(gvr, o) {
		o.SetGeneration(1)
	}
	c.objects[key{gvr.GroupResource(), o.GetNamespace(), o.GetName()}] = &entry{gvr: gvr, obj: o}
	return nil
}

// Get returns a copy of one object, and whether it is held. It does not
// read through.
func (c *Cluster) Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.objects[key{gvr.GroupResource(), namespace, name}]
	if !ok {
		return nil, false
	}
	return e.obj.DeepCopy(), true
}

// List returns copies of the objects of gvr held (in namespace, or in all
// namespaces for ""), sorted by namespace, then name. It does not read
// through.
func (c *Cluster) List(gvr schema.GroupVersionResource, namespace string) []*unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*unstructured.Unstructured
	for _, e := range c.held(gvr.GroupResource(), namespace) {
		out = append(out, e.obj.DeepCopy())
	}
	return out
}

// held returns the entries of resource gr in namespace ("" for all),
// sorted by namespace, then name.
func (c *Cluster) held(gr schema.GroupResource, namespace string) []*entry {
	var keys []key
	for k := range c.objects {
		if k.resource == gr && (namespace == "" || k.namespace == namespace) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, key.compare)
	out := make([]*entry, len(keys))
	for i, k := range keys {
		out[i] = c.objects[k]
	}
	return out
}

// copyIn returns a copy of obj made through JSON, so that it holds only
// the types of decoded JSON (int64, not int), as unstructured objects need,
// and shares nothing with the caller's.
func copyIn(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return decodeObject(obj.Object)
}

// decodeObject turns a JSON object, as bytes or as Go values, into an
// unstructured object of decoded JSON.
func decodeObject(v any) (*unstructured.Unstructured, error) {
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
	}
	var m map[string]any
	// utiljson keeps integers int64.
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	return &unstructured.Unstructured{Object: m}, nil
}
