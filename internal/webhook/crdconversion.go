package webhook

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// ConversionFieldManager, followed by "/" and the operator's configuration
// name (--webhook-configuration-name, which tells operators in one cluster
// apart), owns the spec.conversion of the CRDs the operator registers
// conversions in. It is not the field manager of the hooks' own writes, so
// that a hook that applies a CRD and the registration of its conversion do
// not take each other's fields away, and another operator never releases
// this one's conversions.
const ConversionFieldManager = "hook-operator-conversion"

// conversionManager is the field manager of r's conversions.
func conversionManager(r Registration) string {
	if r.Name == "" {
		return ConversionFieldManager
	}
	return ConversionFieldManager + "/" + r.Name
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDConversion returns the apply configuration that points the
// spec.conversion of CRD crd at the operator: strategy Webhook, the
// Service's path /<crd> (or the URL's), the CA bundle, and
// conversionReviewVersions [v1].
func (r Registration) CRDConversion(crd string) (*unstructured.Unstructured, error) {
	cc := map[string]any{}
	path := ConversionPath(crd)
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("--webhook-url %q: want https://HOST[:PORT], without a path", r.URL)
		}
		cc["url"] = strings.TrimSuffix(r.URL, "/") + path
	} else {
		if r.ServiceName == "" || r.ServiceNamespace == "" {
			return nil, fmt.Errorf("the conversion webhooks need a Service (--webhook-service-name and --operator-namespace) or --webhook-url")
		}
		cc["service"] = map[string]any{"namespace": r.ServiceNamespace, "name": r.ServiceName, "path": path, "port": int64(443)}
	}
	if len(r.CABundle) > 0 {
		cc["caBundle"] = base64.StdEncoding.EncodeToString(r.CABundle)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crd},
		"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"clientConfig":             cc,
				"conversionReviewVersions": []any{"v1"},
			},
		}},
	}}, nil
}

// crdRetry is how often a CRD that is not there yet is looked for again.
const crdRetry = 5 * time.Second

// SyncConversions points the spec.conversion of each CRD in crds at the
// operator (server-side apply, as conversionManager), and takes it
// back from the CRDs it registered before and no binding names any more:
// their spec.conversion returns to what other managers set, strategy None
// when none did. A CRD that does not exist yet is looked for again every
// crdRetry in the background until ctx ends (its manifests may come after
// the operator); other errors are returned. The registered ones are found
// through meta, which reads the CRDs' metadata only.
func SyncConversions(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, r Registration, crds []string, log logrus.FieldLogger) error {
	res := dyn.Resource(crdResource)
	var missing []string
	for _, crd := range crds {
		err := applyConversion(ctx, res, r, crd, log)
		if apierrors.IsNotFound(err) {
			missing = append(missing, crd)
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		log.WithField("crds", missing).Warn("CRDs with conversion bindings do not exist yet; their conversion is registered when they are created")
		go func() {
			t := time.NewTicker(crdRetry)
			defer t.Stop()
			for len(missing) > 0 {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				missing = slices.DeleteFunc(missing, func(crd string) bool {
					err := applyConversion(ctx, res, r, crd, log)
					if err != nil && !apierrors.IsNotFound(err) {
						log.WithError(err).WithField("crd", crd).Warn("registering the conversion webhook failed; trying again")
					}
					return err == nil
				})
			}
		}()
	}
	return releaseConversions(ctx, res, meta, conversionManager(r), crds, log)
}

func applyConversion(ctx context.Context, res dynamic.NamespaceableResourceInterface, r Registration, crd string, log logrus.FieldLogger) error {
	u, err := r.CRDConversion(crd)
	if err != nil {
		return err
	}
	if _, err := res.Apply(ctx, crd, u, metav1.ApplyOptions{FieldManager: conversionManager(r), Force: true}); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("register the conversion webhook in CRD %s: %w (the operator's RBAC needs get and patch on customresourcedefinitions named %s: hook-operator rbac prints the rules)", crd, err, crd)
		}
		return fmt.Errorf("register the conversion webhook in CRD %s: %w", crd, err)
	}
	log.WithField("crd", crd).Info("conversion webhook registered in the CRD")
	return nil
}

// crdPage is how many CRDs releaseConversions asks for at once. It reads
// their metadata only (managedFields tell whose conversion it is): a CRD
// carries its whole schema, hundreds of kilobytes for the large ones, and
// a cluster may have hundreds (docs/design/api-server.md,
// "The CRDs of conversions given back").
var crdPage int64 = 100

// releaseConversions gives up the spec.conversion of the CRDs the operator
// registered and keep is without. Listing CRDs may be forbidden to an
// operator whose RBAC was generated before; then nothing is released.
func releaseConversions(ctx context.Context, res dynamic.NamespaceableResourceInterface, meta metadata.Interface, manager string, keep []string, log logrus.FieldLogger) error {
	var owned []string
	opts := metav1.ListOptions{Limit: crdPage}
	for {
		list, err := meta.Resource(crdResource).List(ctx, opts)
		if apierrors.IsForbidden(err) {
			log.Debug("cannot list CRDs; conversions registered by an earlier run are not looked for")
			return nil
		}
		if err != nil {
			return fmt.Errorf("list CRDs: %w", err)
		}
		for _, crd := range list.Items {
			if !slices.Contains(keep, crd.Name) && ownsConversion(crd.ManagedFields, manager) {
				owned = append(owned, crd.Name)
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	for _, name := range owned {
		empty := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name},
		}}
		if _, err := res.Apply(ctx, name, empty, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release the conversion of CRD %s, which no binding names any more: %w", name, err)
		}
		log.WithField("crd", name).Info("conversion webhook released: no binding names the CRD any more")
	}
	return nil
}

func ownsConversion(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:conversion"`) {
			return true
		}
	}
	return false
}
