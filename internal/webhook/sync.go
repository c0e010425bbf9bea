package webhook

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// FieldManager owns the fields of the configurations the operator applies.
const FieldManager = "hook-operator"

// managedBy marks the configurations the operator wrote, so that it deletes
// only its own when their last binding goes.
const managedBy = "app.kubernetes.io/managed-by"

var configurationResources = map[bool]schema.GroupVersionResource{
	false: {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	true:  {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
}

// Sync makes the cluster's two configurations of r.Name match the bindings:
// each is applied (server-side, so a binding that went away loses its entry)
// when it has bindings, and deleted when it has none and was written by the
// operator. A configuration of that name that the operator did not write is
// left alone when there is nothing to register.
func Sync(ctx context.Context, dyn dynamic.Interface, r Registration, validating, mutating []Admission, log logrus.FieldLogger) error {
	for _, m := range []bool{false, true} {
		bindings := validating
		if m {
			bindings = mutating
		}
		res := dyn.Resource(configurationResources[m])
		if len(bindings) == 0 {
			cur, err := res.Get(ctx, r.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				// Forbidden: an operator without admission bindings need
				// not be allowed to read webhook configurations, and then
				// it has none of its own to delete.
				continue
			}
			if err != nil {
				return fmt.Errorf("read %s %s: %w", configurationResources[m].Resource, r.Name, err)
			}
			if cur.GetLabels()[managedBy] != FieldManager {
				continue
			}
			if err := res.Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s: %w", configurationResources[m].Resource, r.Name, err)
			}
			log.WithField("configuration", r.Name).Info("webhook configuration deleted: no binding of its kind is left")
			continue
		}
		labelled := r
		labelled.Labels = map[string]string{managedBy: FieldManager}
		for k, v := range r.Labels {
			labelled.Labels[k] = v
		}
		u, err := labelled.Configuration(m, bindings)
		if err != nil {
			return err
		}
		if _, err := res.Apply(ctx, r.Name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), r.Name, err)
		}
		log.WithFields(logrus.Fields{"configuration": r.Name, "kind": u.GetKind(), "webhooks": len(bindings)}).Info("webhook configuration applied")
	}
	return nil
}
