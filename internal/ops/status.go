package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/retry"
)

func (p *parser) parseStatus(raw json.RawMessage) {
	js := p.structured("status", raw, "an object")
	if js == nil {
		return
	}
	var m map[string]any
	if err := utiljson.Unmarshal(js, &m); err != nil {
		p.fail("status", "%v", err)
		return
	}
	p.op.Status = m
}

// status applies Status: read the object, merge, and write the status
// only if that changed it. Writing nothing when nothing changed is what
// lets a hook that reports status on every run not trigger itself.
func (a *Applier) status(ctx context.Context, s step) error {
	patch, err := jsonObject(s.op.Status)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	c := a.client(s)
	return retry.RetryOnConflict(conflictBackoff, func() error {
		// Read through the subresource, so a kind without one fails here.
		cur, err := c.Get(ctx, s.op.Name, metav1.GetOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return a.statusMissing(ctx, s, err)
		}
		if err != nil {
			return err
		}
		old, _ := cur.Object["status"].(map[string]any)
		next := mergeStatus(old, patch)
		if s.op.ObservedGeneration {
			next["observedGeneration"] = cur.GetGeneration()
		}
		if sameJSON(old, next) {
			a.log(s).Debug("status unchanged, not written")
			return nil
		}
		cur.Object["status"] = next
		// The resourceVersion read makes a concurrent change a conflict,
		// and the merge is done again on what that change wrote.
		_, err = c.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: a.fieldManager()})
		if apierrors.IsNotFound(err) {
			return a.statusMissing(ctx, s, err)
		}
		if err != nil {
			return err
		}
		a.log(s).Debug("status written")
		return nil
	})
}

// statusMissing decides what a NotFound answer means: the object is
// missing (an error unless ignoreMissingObject), or its kind has no status
// subresource (always an error).
func (a *Applier) statusMissing(ctx context.Context, s step, notFound error) error {
	if _, err := a.client(s).Get(ctx, s.op.Name, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("%s has no status subresource, so Status cannot write it; for a CustomResourceDefinition, enable it with `subresources: {status: {}}` in the version (or use MergePatch on the object)", s.op.Kind)
	}
	if s.op.IgnoreMissingObject {
		a.log(s).Info("object not found; skipped, as ignoreMissingObject is set")
		return nil
	}
	return fmt.Errorf("%w (set ignoreMissingObject: true where a missing object is fine)", notFound)
}

// mergeStatus returns current with patch merged in as an RFC 7386 JSON
// merge patch: objects merge key by key, null deletes a key, anything else
// replaces. Neither argument is changed; the result shares no maps with
// patch, and only unchanged values with current.
func mergeStatus(current, patch map[string]any) map[string]any {
	out := make(map[string]any, len(current)+len(patch))
	for k, v := range current {
		out[k] = v
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			cv, _ := out[k].(map[string]any)
			out[k] = mergeStatus(cv, pv)
		default:
			out[k] = copyJSON(v)
		}
	}
	return out
}

// copyJSON deep-copies a JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyJSON(e)
		}
		return l
	}
	return v
}

// sameJSON tells whether two statuses are the same as JSON, so that 1 and
// 1.0 compare equal, and an absent status equals an empty one.
func sameJSON(a, b map[string]any) bool {
	if a == nil {
		a = map[string]any{}
	}
	if b == nil {
		b = map[string]any{}
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// jsonObject returns a copy of m holding only the types of decoded JSON
// (int64 or float64 numbers), as unstructured objects need: operations
// built in code may hold ints or structs.
func jsonObject(m map[string]any) (map[string]any, error) {
	js, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(js, &out); err != nil {
		return nil, err
	}
	return out, nil
}
