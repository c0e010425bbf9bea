package ops

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// delete applies the three delete types. A missing object is what a delete
// wants, so it is a success.
func (a *Applier) delete(ctx context.Context, s step, policy metav1.DeletionPropagation) error {
	err := a.client(s).Delete(ctx, s.op.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		a.log(s).Debug("not found, nothing to delete")
		return nil
	}
	if err != nil {
		return err
	}
	a.log(s).Debug("deleted")
	if policy != metav1.DeletePropagationForeground {
		return nil
	}
	// shell-operator waits for a foreground deletion to finish, and hooks
	// rely on it: a Delete followed by a Create of the same name in one
	// file, or a next run that must not see the old dependents.
	return a.waitGone(ctx, s)
}

func (a *Applier) waitGone(ctx context.Context, s step) error {
	timeout := a.DeleteTimeout
	if timeout <= 0 {
		timeout = DefaultDeleteTimeout
	}
	var last *unstructured.Unstructured
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := a.client(s).Get(ctx, s.op.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			// Keep polling: a failed read does not mean the deletion did.
			lastErr = err
			return false, nil
		}
		last = obj
		// Without a deletionTimestamp it is a new object of the same name.
		return obj.GetDeletionTimestamp() == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("deletion started; stopped waiting for it to finish: %w", ctx.Err())
	case last != nil:
		return fmt.Errorf("deletion started, but the object still exists after %s: it waits for its dependents to be deleted and for its finalizers %v to be removed", timeout, last.GetFinalizers())
	case lastErr != nil:
		return fmt.Errorf("deletion started; waiting for it to finish: %w", lastErr)
	}
	return fmt.Errorf("deletion started; waiting for it to finish: %w", err)
}
