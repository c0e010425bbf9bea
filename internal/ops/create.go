package ops

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// create applies Create and CreateIfNotExists.
func (a *Applier) create(ctx context.Context, s step) error {
	_, err := a.client(s).Create(ctx, s.obj, metav1.CreateOptions{FieldManager: a.fieldManager()})
	switch {
	case err == nil:
		a.log(s).Debug("created")
		return nil
	case apierrors.IsAlreadyExists(err) && s.op.Type == CreateIfNotExists:
		a.log(s).Debug("exists already, left as it is")
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w (use CreateIfNotExists or CreateOrUpdate where an existing object is fine)", err)
	}
	return err
}

// createOrUpdate creates the object, or replaces the existing one with it.
// The existing object's status is kept: status belongs to whoever reports
// it, and kinds without a status subresource would otherwise lose it.
func (a *Applier) createOrUpdate(ctx context.Context, s step) error {
	c := a.client(s)
	// The object can be deleted between a failed create and the update;
	// then creating is right again. Three rounds make a persistent race an
	// error rather than a loop.
	var rv string
	exists := false
	if a.Cached != nil {
		rv, exists = a.Cached(s.res, s.op.Namespace, s.op.Name)
	}
	// One request when the cache knows the object's resourceVersion and
	// replacing the object cannot lose its status: the kind has a status
	// subresource (writes of the object leave status alone), or it is one
	// of Kubernetes' own kinds without one (they have no status field). A
	// cache that is behind gets a conflict or NotFound, and the request
	// is made again the long way.
	if exists && rv != "" && (s.res.Status || kube.Builtin(s.res.GVR)) {
		next := s.obj.DeepCopy()
		next.SetResourceVersion(rv)
		delete(next.Object, "status")
		_, err := c.Update(ctx, next, metav1.UpdateOptions{FieldManager: a.fieldManager()})
		switch {
		case err == nil:
			a.log(s).Debug("updated")
			return nil
		case apierrors.IsNotFound(err):
			exists = false
		case !apierrors.IsConflict(err):
			return err
		}
	}
	for range 3 {
		if !exists {
			_, err := c.Create(ctx, s.obj, metav1.CreateOptions{FieldManager: a.fieldManager()})
			if err == nil {
				a.log(s).Debug("created")
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		exists = false // the cache may be behind: on NotFound, create
		err := retry.RetryOnConflict(conflictBackoff, func() error {
			live, err := c.Get(ctx, s.op.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			next := s.obj.DeepCopy()
			next.SetResourceVersion(live.GetResourceVersion())
			if status, found := live.Object["status"]; found {
				next.Object["status"] = status
			} else {
				delete(next.Object, "status")
			}
			_, err = c.Update(ctx, next, metav1.UpdateOptions{FieldManager: a.fieldManager()})
			return err
		})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err == nil {
			a.log(s).Debug("updated")
		}
		return err
	}
	return fmt.Errorf("the object was deleted each time it was about to be updated; something else keeps deleting it")
}
