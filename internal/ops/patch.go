package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/retry"

	"github.com/hook-operator/hook-operator/internal/jq"
)

// patch applies MergePatch and JSONPatch.
func (a *Applier) patch(ctx context.Context, s step) error {
	pt, data := types.MergePatchType, s.op.MergePatch
	if s.op.Type == JSONPatch {
		pt, data = types.JSONPatchType, s.op.JSONPatch
	}
	_, err := a.client(s).Patch(ctx, s.op.Name, pt, data, metav1.PatchOptions{FieldManager: a.fieldManager()}, subresources(s)...)
	if apierrors.IsNotFound(err) {
		return a.missing(ctx, s, err)
	}
	if err == nil {
		a.log(s).Debug("patched")
	}
	return err
}

// jqPatch applies JQPatch: the filter gets the current object and returns
// the new one, which replaces it unless they are equal.
func (a *Applier) jqPatch(ctx context.Context, s step) error {
	c := a.client(s)
	return retry.RetryOnConflict(conflictBackoff, func() error {
		cur, err := c.Get(ctx, s.op.Name, metav1.GetOptions{}, subresources(s)...)
		if apierrors.IsNotFound(err) {
			return a.missing(ctx, s, err)
		}
		if err != nil {
			return err
		}
		next, changed, err := runJQPatch(s.op.JQFilter, cur)
		if err != nil {
			return err
		}
		if !changed {
			a.log(s).Debug("jqFilter changed nothing, not written")
			return nil
		}
		_, err = c.Update(ctx, next, metav1.UpdateOptions{FieldManager: a.fieldManager()}, subresources(s)...)
		if err == nil {
			a.log(s).Debug("updated")
		}
		return err
	})
}

// runJQPatch runs f on cur and returns the object to write, and whether it
// differs from cur.
func runJQPatch(f *jq.Filter, cur *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	in := jq.Normalize(cur.DeepCopy().Object)
	outs, err := f.All(in)
	if err != nil {
		return nil, false, err
	}
	if len(outs) != 1 {
		return nil, false, fmt.Errorf("jqFilter returned %d values; it must return exactly one, the whole new object (write .a = 1 | .b = 2, not .a = 1, .b = 2)", len(outs))
	}
	if _, isMap := outs[0].(map[string]any); !isMap {
		return nil, false, fmt.Errorf("jqFilter returned %s; it must return the whole new object (write .spec.x = 1, not .spec.x)", describeValue(outs[0]))
	}
	before, err := json.Marshal(in)
	if err != nil {
		return nil, false, err
	}
	after, err := json.Marshal(outs[0])
	if err != nil {
		return nil, false, fmt.Errorf("jqFilter result: %w", err)
	}
	if bytes.Equal(before, after) {
		return nil, false, nil
	}
	// Re-decoded rather than converted, so numbers are int64 or float64 as
	// unstructured objects require.
	var m map[string]any
	if err := utiljson.Unmarshal(after, &m); err != nil {
		return nil, false, fmt.Errorf("jqFilter result: %w", err)
	}
	next := &unstructured.Unstructured{Object: m}
	if next.GetAPIVersion() == "" {
		next.SetAPIVersion(cur.GetAPIVersion())
	}
	if next.GetKind() == "" {
		next.SetKind(cur.GetKind())
	}
	if next.GetName() == "" {
		next.SetName(cur.GetName())
	}
	if next.GetNamespace() == "" {
		next.SetNamespace(cur.GetNamespace())
	}
	// The filter saw this version; writing any other would lose updates.
	next.SetResourceVersion(cur.GetResourceVersion())
	return next, true, nil
}

// missing decides what a NotFound answer to a patch means: the object is
// missing (an error unless ignoreMissingObject), or the object exists but
// not the subresource (always an error).
func (a *Applier) missing(ctx context.Context, s step, notFound error) error {
	if s.op.Subresource != "" {
		if _, err := a.client(s).Get(ctx, s.op.Name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("%w: the object exists, but %s has no subresource %q", notFound, s.op.Kind, s.op.Subresource)
		}
	}
	if s.op.IgnoreMissingObject {
		a.log(s).Info("object not found; skipped, as ignoreMissingObject is set")
		return nil
	}
	return fmt.Errorf("%w (set ignoreMissingObject: true where a missing object is fine)", notFound)
}
