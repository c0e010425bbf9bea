package memcluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

var _ dynamic.Interface = (*Cluster)(nil)

// Resource serves the objects of resource gvr, as the dynamic client of a
// cluster would. Objects of the same group and resource are the same
// objects under any version.
func (c *Cluster) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &resource{c: c, gvr: gvr}
}

// resource serves one resource, in one namespace or cluster-wide.
type resource struct {
	c         *Cluster
	gvr       schema.GroupVersionResource
	namespace string
}

func (r *resource) Namespace(namespace string) dynamic.ResourceInterface {
	return &resource{c: r.c, gvr: r.gvr, namespace: namespace}
}

// req is one request: the object it names (the name may be empty, as for
// List) and the context to read through with.
type req struct {
	ctx             context.Context
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (r *resource) req(ctx context.Context, name string) req {
	return req{ctx: ctx, gvr: r.gvr, namespace: r.namespace, name: name}
}

func (q req) key() key { return key{q.gvr.GroupResource(), q.namespace, q.name} }

func (q req) gr() schema.GroupResource { return q.gvr.GroupResource() }

// String reads like "deployments.apps ns/name".
func (q req) String() string {
	s := q.gr().String() + " "
	if q.namespace != "" {
		s += q.namespace + "/"
	}
	return s + q.name
}

// subresource returns the one subresource of a call, or "".
func (r *resource) subresource(name string, subresources []string) (string, error) {
	switch len(subresources) {
	case 0:
		return "", nil
	case 1:
		return subresources[0], nil
	}
	return "", badRequest(r.gvr.GroupResource(), name, "one subresource at most, got %q", subresources)
}

func (r *resource) Create(ctx context.Context, obj *unstructured.Unstructured, _ metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	gr := r.gvr.GroupResource()
	if obj == nil {
		return nil, badRequest(gr, "", "the object to create is nil")
	}
	if sub, err := r.subresource(obj.GetName(), subresources); err != nil || sub != "" {
		if err == nil {
			err = methodNotSupported(gr, "memcluster does not create subresource %q", sub)
		}
		return nil, err
	}
	o, err := copyIn(obj)
	if err != nil {
		return nil, badRequest(gr, obj.GetName(), "%v", err)
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.create(r.req(ctx, ""), o)
}

func (r *resource) Update(ctx context.Context, obj *unstructured.Unstructured, _ metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	gr := r.gvr.GroupResource()
	if obj == nil {
		return nil, badRequest(gr, "", "the object to update is nil")
	}
	sub, err := r.subresource(obj.GetName(), subresources)
	if err != nil {
		return nil, err
	}
	o, err := copyIn(obj)
	if err != nil {
		return nil, badRequest(gr, obj.GetName(), "%v", err)
	}
	if o.GetName() == "" {
		return nil, badRequest(gr, "", "metadata.name is required to update an object")
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.update(r.req(ctx, o.GetName()), o, sub)
}

func (r *resource) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.Update(ctx, obj, opts, "status")
}

func (r *resource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error {
	if sub, err := r.subresource(name, subresources); err != nil || sub != "" {
		if err == nil {
			err = methodNotSupported(r.gvr.GroupResource(), "memcluster does not delete subresource %q", sub)
		}
		return err
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.delete(r.req(ctx, name), opts)
}

func (r *resource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.deleteCollection(r.req(ctx, ""), opts, listOpts)
}

func (r *resource) Get(ctx context.Context, name string, _ metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	sub, err := r.subresource(name, subresources)
	if err != nil {
		return nil, err
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	q := r.req(ctx, name)
	e, err := r.c.load(q)
	switch {
	case err != nil:
		return nil, err
	case e == nil:
		return nil, notFound(q.gr(), name)
	}
	switch sub {
	case "", "status":
		return e.obj.DeepCopy(), nil
	case "scale":
		return scaleOf(e.obj), nil
	}
	return nil, noSubresource(q.gr(), sub, name)
}

func (r *resource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.list(r.req(ctx, ""), opts)
}

// Watch fails: memcluster records changes (see TakeChanges) instead of
// serving watches.
func (r *resource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, methodNotSupported(r.gvr.GroupResource(), "memcluster does not serve watches; its changes are read with TakeChanges")
}

func (r *resource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	sub, err := r.subresource(name, subresources)
	if err != nil {
		return nil, err
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.patch(r.req(ctx, name), pt, data, opts, sub)
}

// Apply is Patch with types.ApplyPatchType: see the package documentation
// for how server-side apply is approximated.
func (r *resource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, badRequest(r.gvr.GroupResource(), name, "the object to apply is nil")
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, badRequest(r.gvr.GroupResource(), name, "%v", err)
	}
	return r.Patch(ctx, name, types.ApplyPatchType, data, opts.ToPatchOptions(), subresources...)
}

func (r *resource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return r.Apply(ctx, name, obj, opts, "status")
}
