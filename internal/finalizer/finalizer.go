// Package finalizer adds and removes the finalizers that kubernetes
// bindings with the finalizer option keep on their objects (extension):
// added to every watched object, removed only after the hook's Finalize run
// succeeded, so an object's deletion waits for its hook.
package finalizer

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// Target names one finalizer on one object.
type Target struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
	Finalizer       string
}

func (t Target) String() string {
	obj := t.Name
	if t.Namespace != "" {
		obj = t.Namespace + "/" + t.Name
	}
	return fmt.Sprintf("%s %s (finalizer %s)", t.Resource.Resource, obj, t.Finalizer)
}

// Manager writes finalizers with the field manager hook-operator.
type Manager struct {
	client dynamic.Interface
	log    logrus.FieldLogger
	queue  workqueue.TypedRateLimitingInterface[Target]
}

// New returns a manager; Run must be called for Ensure to take effect.
func New(client dynamic.Interface, log logrus.FieldLogger) *Manager {
	return &Manager{
		client: client,
		log:    log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[Target](),
			workqueue.TypedRateLimitingQueueConfig[Target]{Name: "finalizers"},
		),
	}
}

// Ensure queues adding t's finalizer; duplicates collapse. Failed attempts
// are retried with backoff.
func (m *Manager) Ensure(t Target) { m.queue.Add(t) }

// Run adds queued finalizers with the given number of workers until ctx ends.
func (m *Manager) Run(ctx context.Context, workers int) {
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
	for range workers {
		go func() {
			for {
				t, quit := m.queue.Get()
				if quit {
					return
				}
				if err := m.Add(ctx, t); err != nil && ctx.Err() == nil {
					m.log.WithError(err).WithField("object", t.String()).Warn("adding the finalizer failed; retrying")
					m.queue.AddRateLimited(t)
				} else {
					m.queue.Forget(t)
				}
				m.queue.Done(t)
			}
		}()
	}
}

func (m *Manager) resource(t Target) dynamic.ResourceInterface {
	r := m.client.Resource(t.Resource)
	if t.Namespace != "" {
		return r.Namespace(t.Namespace)
	}
	return r
}

// Add puts t's finalizer on the object now, unless it is gone, being
// deleted, or has it already. Ensure is its asynchronous, retrying form.
func (m *Manager) Add(ctx context.Context, t Target) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := m.resource(t).Get(ctx, t.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if obj.GetDeletionTimestamp() != nil {
			return nil
		}
		fs := obj.GetFinalizers()
		for _, f := range fs {
			if f == t.Finalizer {
				return nil
			}
		}
		obj.SetFinalizers(append(fs, t.Finalizer))
		_, err = m.resource(t).Update(ctx, obj, metav1.UpdateOptions{FieldManager: "hook-operator"})
		if err == nil {
			m.log.WithField("object", t.String()).Debug("finalizer added")
		}
		return err
	})
}

// Remove takes t's finalizer off the object. An object that is gone or no
// longer holds it is fine.
func (m *Manager) Remove(ctx context.Context, t Target) (removed bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		removed = false
		obj, err := m.resource(t).Get(ctx, t.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		fs := obj.GetFinalizers()
		kept := make([]string, 0, len(fs))
		for _, f := range fs {
			if f != t.Finalizer {
				kept = append(kept, f)
			}
		}
		if len(kept) == len(fs) {
			return nil
		}
		obj.SetFinalizers(kept)
		_, err = m.resource(t).Update(ctx, obj, metav1.UpdateOptions{FieldManager: "hook-operator"})
		if apierrors.IsNotFound(err) {
			return nil
		}
		removed = err == nil
		return err
	})
	return removed, err
}

// Holders lists the objects of resource (in namespace, or all when empty,
// matching labelSelector) that hold finalizer.
func (m *Manager) Holders(ctx context.Context, resource schema.GroupVersionResource, namespace, labelSelector, finalizer string) ([]Target, error) {
	r := m.client.Resource(resource)
	var ri dynamic.ResourceInterface = r
	if namespace != "" {
		ri = r.Namespace(namespace)
	}
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
	if err != nil {
		return nil, err
	}
	var out []Target
	for _, obj := range list.Items {
		for _, f := range obj.GetFinalizers() {
			if f == finalizer {
				out = append(out, Target{Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName(), Finalizer: finalizer})
				break
			}
		}
	}
	return out, nil
}
