package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
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

// Serve runs an HTTPS server for handler on address with the reloader's
// certificate until ctx ends, and returns the address it listens on. With
// clientCAs, a client must present a certificate one of them signed (the
// API server's, configured in its admission configuration).
func Serve(ctx context.Context, address string, handler http.Handler, certs *CertReloader, clientCAs *x509.CertPool, log logrus.FieldLogger) (net.Addr, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}
	tlsConfig := certs.TLSConfig()
	if clientCAs != nil {
		tlsConfig.ClientCAs, tlsConfig.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		// The API server waits at most 30 s for a webhook.
		WriteTimeout: 35 * time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("webhook server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return ln.Addr(), nil
}

// ClientCAs reads the PEM files of the CAs whose client certificates the
// webhook server accepts; nil when files is empty.
func ClientCAs(files []string) (*x509.CertPool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate in it", strings.TrimSpace(f))
		}
	}
	return pool, nil
}
