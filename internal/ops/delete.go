package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// delete applies the three delete types. A missing object is what a delete
// wants, so it is a success. It reports whether the object still has to be
// waited for: a foreground deletion that started (see waitGone).
func (a *Applier) delete(ctx context.Context, s step, policy metav1.DeletionPropagation) (bool, error) {
	err := a.client(s).Delete(ctx, s.op.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		a.log(s).Debug("not found, nothing to delete")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	a.log(s).Debug("deleted")
	// shell-operator waits for a foreground deletion to finish, and hooks
	// rely on it: a Delete followed by a Create of the same name in one
	// file, or a next run that must not see the old dependents.
	return policy == metav1.DeletePropagationForeground, nil
}

// waitGone waits until the objects of foreground deletions are gone. The
// deletions of consecutive Delete operations run side by side: each is
// started, and then they are waited for together, before the next other
// operation (see ApplyFor). Per resource and namespace it costs one list
// and one watch, however many objects there are, rather than polling each
// one.
func (a *Applier) waitGone(ctx context.Context, steps []step) error {
	timeout := a.DeleteTimeout
	if timeout <= 0 {
		timeout = DefaultDeleteTimeout
	}
	// The first look (a list) may take longer than a short timeout allows
	// (dry-run and replay wait a millisecond: in memory, a deleted object
	// is gone at once); waiting after it is what the timeout bounds.
	look, cancelLook := context.WithTimeout(ctx, max(timeout, 30*time.Second))
	defer cancelLook()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The steps of each resource and namespace, by object name.
	groups := map[target]map[string]step{}
	var order []target
	for _, s := range steps {
		t := target{res: s.res, namespace: s.op.Namespace}
		if groups[t] == nil {
			groups[t] = map[string]step{}
			order = append(order, t)
		}
		groups[t][s.op.Name] = s
	}
	for _, t := range order {
		if err := a.waitGroupGone(look, ctx, t, groups[t], timeout); err != nil {
			return err
		}
	}
	return nil
}

// goneError is the error of a deletion waited for in vain, on the step of
// its operation.
type goneError struct {
	s   step
	err error
}

func (e *goneError) Error() string { return e.err.Error() }
func (e *goneError) Unwrap() error { return e.err }

// waitGroupGone waits for the objects of waiting (by name), all of
// resource and namespace t: a list tells which are still there (with a
// deletion timestamp: an object of the same name without one is a new
// object), and a watch from the list's resourceVersion tells when those are
// deleted.
func (a *Applier) waitGroupGone(look, ctx context.Context, t target, waiting map[string]step, timeout time.Duration) error {
	c := a.clientFor(t)
	left := map[string]*unstructured.Unstructured{}
	var rv string
	var lastErr error
	for {
		list, err := c.List(look, metav1.ListOptions{})
		if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
			// May delete and get, but not list: ask for each object.
			return a.pollGone(ctx, c, waiting, timeout)
		}
		if err == nil {
			rv = list.GetResourceVersion()
			clear(left)
			for i := range list.Items {
				o := &list.Items[i]
				if _, ok := waiting[o.GetName()]; ok && o.GetDeletionTimestamp() != nil {
					left[o.GetName()] = o
				}
			}
			break
		}
		// A failed read does not mean the deletion did: read again.
		lastErr = err
		select {
		case <-ctx.Done():
			return a.notGone(ctx, waiting, left, lastErr, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for len(left) > 0 {
		w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
			return a.pollGone(ctx, c, stepsMap(waiting, left), timeout)
		}
		if err != nil {
			if ctx.Err() != nil {
				return a.notGone(ctx, waiting, left, err, timeout)
			}
			lastErr = err
			// The resourceVersion may be too old by now: list again.
			return a.waitGroupGone(look, ctx, t, stepsMap(waiting, left), timeout)
		}
		relist := false
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				// An ERROR event (the resourceVersion is too old, say):
				// list again, after a pause.
				relist = true
				break
			}
			rv = o.GetResourceVersion()
			if _, waited := left[o.GetName()]; !waited {
				continue
			}
			if ev.Type == watch.Deleted || o.GetDeletionTimestamp() == nil {
				delete(left, o.GetName())
			} else {
				left[o.GetName()] = o
			}
			if len(left) == 0 {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil && len(left) > 0 {
			return a.notGone(ctx, waiting, left, lastErr, timeout)
		}
		if relist && len(left) > 0 {
			select {
			case <-ctx.Done():
				return a.notGone(ctx, waiting, left, lastErr, timeout)
			case <-time.After(200 * time.Millisecond):
			}
			return a.waitGroupGone(look, ctx, t, stepsMap(waiting, left), timeout)
		}
	}
	return nil
}

// pollGone waits for the objects of waiting by asking for each in turn
// every 200ms: for a hook allowed to delete and get the kind, but not to
// list and watch it.
func (a *Applier) pollGone(ctx context.Context, c dynamic.ResourceInterface, waiting map[string]step, timeout time.Duration) error {
	left := map[string]*unstructured.Unstructured{}
	for n := range waiting {
		left[n] = nil
	}
	var lastErr error
	for {
		for n := range left {
			obj, err := c.Get(ctx, n, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				delete(left, n)
			case err != nil:
				lastErr = err // a failed read does not mean the deletion did
			case obj.GetDeletionTimestamp() == nil:
				delete(left, n) // a new object of the same name
			default:
				left[n] = obj
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return a.notGone(ctx, waiting, left, lastErr, timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stepsMap returns the steps of waiting whose names are in left, by name.
func stepsMap(waiting map[string]step, left map[string]*unstructured.Unstructured) map[string]step {
	out := map[string]step{}
	for n := range left {
		out[n] = waiting[n]
	}
	return out
}

// notGone is the error of objects still there when the wait ended: it is
// reported on the first of their operations, naming the others.
func (a *Applier) notGone(ctx context.Context, waiting map[string]step, left map[string]*unstructured.Unstructured, lastErr error, timeout time.Duration) error {
	names := make([]string, 0, len(left))
	for n := range left {
		names = append(names, n)
	}
	if len(names) == 0 {
		// The list never answered: every object is in doubt.
		for n := range waiting {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return waiting[names[i]].op.Index < waiting[names[j]].op.Index })
	first := waiting[names[0]]
	others := ""
	if len(names) > 1 {
		others = fmt.Sprintf(" (and %d more: %s)", len(names)-1, strings.Join(names[1:min(len(names), 6)], ", "))
	}
	var err error
	switch o := left[names[0]]; {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && o != nil:
		err = fmt.Errorf("deletion started, but the object still exists after %s%s: it waits for its dependents to be deleted and for its finalizers %v to be removed", timeout, others, o.GetFinalizers())
	case lastErr != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("deletion started; waiting for it to finish%s: %w", others, lastErr)
	default:
		err = fmt.Errorf("deletion started; stopped waiting for it to finish%s: %w", others, ctx.Err())
	}
	return &goneError{s: first, err: err}
}
