package dryrun

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/redact"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// recorder keeps what the API server answered to one run's dry-run writes.
type recorder struct {
	opts transcript.Options

	mu      sync.Mutex
	changes []transcript.Change
	deleted map[string]bool
}

// record keeps the answer to one request: result or err. sent is the
// object sent, when there was one; before is the live object, for a diff.
func (r *recorder) record(action string, gvr schema.GroupVersionResource, namespace, name string, sent, before, result *unstructured.Unstructured, err error) {
	named := result
	if named == nil {
		named = sent
	}
	c := transcript.Change{Action: action, Object: objectName(gvr, named, namespace, name)}
	if err != nil {
		c.Error = err.Error()
	} else if result != nil {
		obj := result.DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
		var v any = obj.Object
		if !r.opts.ShowSecrets {
			v = redact.Value(v)
		}
		c.Result = v
		if before != nil {
			c.Diff = transcript.Diff(before, result, r.opts)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
}

func objectName(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, namespace, name string) string {
	if obj != nil && obj.GetKind() != "" {
		if obj.GetName() != "" {
			name = obj.GetName()
		}
		return transcript.ObjectName(obj.GetAPIVersion(), obj.GetKind(), namespace, name)
	}
	return transcript.ObjectName(gvr.GroupVersion().String(), gvr.Resource, namespace, name)
}

func deletedKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return gvr.GroupResource().String() + "/" + namespace + "/" + name
}

// dryClient is a dynamic.Interface whose writes are dry-run requests.
type dryClient struct {
	live dynamic.Interface
	rec  *recorder
}

func (c *dryClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	live := c.live.Resource(gvr)
	return &dryResource{ResourceInterface: live, live: live, gvr: gvr, rec: c.rec}
}

// dryResource sends writes with dryRun=All and records the answers.
type dryResource struct {
	dynamic.ResourceInterface
	live      dynamic.NamespaceableResourceInterface
	gvr       schema.GroupVersionResource
	namespace string
	rec       *recorder
}

func (d *dryResource) Namespace(ns string) dynamic.ResourceInterface {
	return &dryResource{ResourceInterface: d.live.Namespace(ns), live: d.live, gvr: d.gvr, namespace: ns, rec: d.rec}
}

var dryRunAll = []string{metav1.DryRunAll}

// current reads the live object, for diffs; nil when it cannot.
func (d *dryResource) current(ctx context.Context, name string, subresources ...string) *unstructured.Unstructured {
	if name == "" {
		return nil
	}
	obj, err := d.ResourceInterface.Get(ctx, name, metav1.GetOptions{}, subresources...)
	if err != nil {
		return nil
	}
	return obj
}

func (d *dryResource) Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	d.rec.mu.Lock()
	gone := d.rec.deleted[deletedKey(d.gvr, d.namespace, name)]
	d.rec.mu.Unlock()
	if gone {
		return nil, apierrors.NewNotFound(d.gvr.GroupResource(), name)
	}
	return d.ResourceInterface.Get(ctx, name, opts, subresources...)
}

func (d *dryResource) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.Create(ctx, obj, opts, subresources...)
	d.rec.record("Create", d.gvr, d.namespace, obj.GetName(), obj, nil, out, err)
	return out, err
}

func (d *dryResource) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	before := d.current(ctx, obj.GetName(), subresources...)
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.Update(ctx, obj, opts, subresources...)
	d.rec.record("Update", d.gvr, d.namespace, obj.GetName(), obj, before, out, err)
	return out, err
}

func (d *dryResource) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	before := d.current(ctx, obj.GetName(), "status")
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.UpdateStatus(ctx, obj, opts)
	d.rec.record("UpdateStatus", d.gvr, d.namespace, obj.GetName(), obj, before, out, err)
	return out, err
}

func (d *dryResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	before := d.current(ctx, name, subresources...)
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.Patch(ctx, name, pt, data, opts, subresources...)
	action := "Patch"
	if pt == types.ApplyPatchType {
		action = "Apply"
	}
	d.rec.record(action, d.gvr, d.namespace, name, before, before, out, err)
	return out, err
}

func (d *dryResource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	before := d.current(ctx, name, subresources...)
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.Apply(ctx, name, obj, opts, subresources...)
	d.rec.record("Apply", d.gvr, d.namespace, name, obj, before, out, err)
	return out, err
}

func (d *dryResource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	before := d.current(ctx, name, "status")
	opts.DryRun = dryRunAll
	out, err := d.ResourceInterface.ApplyStatus(ctx, name, obj, opts)
	d.rec.record("ApplyStatus", d.gvr, d.namespace, name, obj, before, out, err)
	return out, err
}

func (d *dryResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error {
	live := d.current(ctx, name)
	opts.DryRun = dryRunAll
	err := d.ResourceInterface.Delete(ctx, name, opts, subresources...)
	d.rec.record("Delete", d.gvr, d.namespace, name, live, nil, nil, err)
	if err == nil {
		d.rec.mu.Lock()
		d.rec.deleted[deletedKey(d.gvr, d.namespace, name)] = true
		d.rec.mu.Unlock()
	}
	return err
}

func (d *dryResource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return fmt.Errorf("dry-run: DeleteCollection is not used by hook-operator")
}

func (d *dryResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return d.ResourceInterface.Watch(ctx, opts)
}
