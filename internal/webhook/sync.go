package webhook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

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
//
// With r.Mode ModeExisting, the configurations are only filled in and
// emptied, never created or deleted (see syncExisting).
func Sync(ctx context.Context, dyn dynamic.Interface, r Registration, validating, mutating []Admission, log logrus.FieldLogger) error {
	if r.Mode == ModeExisting {
		return syncExisting(ctx, dyn, r, validating, mutating, log)
	}
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
				return fmt.Errorf("delete %s %s: %w%s", configurationResources[m].Resource, r.Name, err, managedRBAC(err, m, r.Name))
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
			return fmt.Errorf("apply %s %s: %w%s", u.GetKind(), r.Name, err, managedRBAC(err, m, r.Name))
		}
		log.WithFields(logrus.Fields{"configuration": r.Name, "kind": u.GetKind(), "webhooks": len(bindings)}).Info("webhook configuration applied")
	}
	return nil
}

// managedRBAC says, after a Forbidden err, what the operator's RBAC needs
// in ModeManaged for the configurations of name and the kind mutating
// says (the API server's message names the verb it refused); "" after
// other errors.
func managedRBAC(err error, mutating bool, name string) string {
	if !apierrors.IsForbidden(err) {
		return ""
	}
	return fmt.Sprintf(" (the operator's RBAC needs create on %[1]s, and get, patch and delete on %[1]s named %[2]s: hook-operator rbac prints the rules;"+
		" --webhook-configuration-mode=%[3]s needs only get and patch)", configurationResources[mutating].Resource, name, ModeExisting)
}

// register applies the configurations of the admission bindings (deleting
// those of a kind that has none left), and points the CRDs converted at
// the conversion listener, giving back those no binding converts.
func (s *Server) register(ctx context.Context, b Bindings, admission, conversion bool) error {
	dyn := s.o.Dynamic
	if admission {
		reg, err := s.registration(s.o.CA, s.o.ServiceName, s.o.URL)
		if err != nil {
			return err
		}
		if err := Sync(ctx, dyn, reg, b.Validating, b.Mutating, s.log); err != nil {
			return err
		}
	} else if err := Sync(ctx, dyn, Registration{Name: s.o.ConfigurationName, Mode: s.o.ConfigurationMode}, nil, nil, s.log); err != nil {
		// Bindings that went away: their configurations go too.
		return err
	}
	ca, service, url := s.o.CA, s.o.ServiceName, s.o.URL
	if s.separate {
		ca, service, url = s.conv.CA, s.conv.ServiceName, s.conv.URL
	}
	// The name tells this operator's conversions from other operators'.
	reg := Registration{Name: s.o.ConfigurationName}
	if conversion {
		var err error
		if reg, err = s.registration(ca, service, url); err != nil {
			return err
		}
	}
	// A CRD not there yet is looked for until the next change.
	if s.stopCRDRetry != nil {
		s.stopCRDRetry()
	}
	var retry context.Context
	retry, s.stopCRDRetry = context.WithCancel(ctx)
	return SyncConversions(retry, dyn, s.o.Metadata, reg, b.CRDs(), s.log)
}

// registerDryRun registers the admission bindings of a dry run under
// configurations of its own (named <ConfigurationName>-dry-run, so that a
// dry run beside the real operator does not take its registration over),
// with failurePolicy Ignore for every webhook; they are deleted when its
// last binding goes and when the dry run stops. A dry run writes nothing
// else.
func (s *Server) registerDryRun(ctx context.Context, b Bindings, admission bool) error {
	if !admission {
		if !s.dryRunWritten {
			return nil
		}
		s.dryRunWritten = false
		return Sync(ctx, s.o.Dynamic, Registration{Name: s.dryRunName(), Mode: s.o.ConfigurationMode}, nil, nil, s.log)
	}
	reg, err := s.registration(s.o.CA, s.o.ServiceName, s.o.URL)
	if err != nil {
		return err
	}
	reg.Name, reg.IgnoreFailures = s.dryRunName(), true
	s.dryRunWritten = true
	return Sync(ctx, s.o.Dynamic, reg, b.Validating, b.Mutating, s.log)
}

func (s *Server) dryRunName() string { return s.o.ConfigurationName + "-dry-run" }

// cleanup deletes the configurations a dry run wrote.
func (s *Server) cleanup() {
	if s.stopCRDRetry != nil {
		s.stopCRDRetry()
	}
	if !s.dryRunWritten {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Sync(ctx, s.o.Dynamic, Registration{Name: s.dryRunName(), Mode: s.o.ConfigurationMode}, nil, nil, s.log); err != nil {
		s.log.WithError(err).Warn("dry-run: deleting the dry run's webhook configurations failed; delete them by hand")
	}
}

// registration says how to register the webhooks served with the CA in
// file caFile (read now, so that a rotated CA is registered), by service
// or url. With SelfSigned the CA is the one held in memory.
func (s *Server) registration(caFile, service, url string) (Registration, error) {
	var ca []byte
	if s.certs != nil {
		ca = s.certs.CA()
	} else {
		var err error
		if ca, err = os.ReadFile(caFile); err != nil {
			return Registration{}, fmt.Errorf("the CA bundle for the webhook registrations (--webhook-ca, or --conversion-webhook-ca): %w", err)
		}
	}
	reg := Registration{
		Name: s.o.ConfigurationName, Mode: s.o.ConfigurationMode, ServiceNamespace: s.o.Namespace, ServiceName: service,
		URL: url, CABundle: ca, FailurePolicy: s.o.FailurePolicy, Labels: s.o.Labels, Annotations: s.o.Annotations,
	}
	if reg.URL == "" && reg.ServiceNamespace == "" {
		return reg, errors.New("registering the webhooks by Service needs the operator's namespace: set --operator-namespace (or run in a Pod), or register by --webhook-url")
	}
	return reg, nil
}
