package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"strings"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// Admission is one admission binding to register: the hook that has it
// (its path, for messages) and the binding.
type Admission struct {
	Hook    string
	Binding hook.WebhookBinding
}

// DefaultConfigurationName names the ValidatingWebhookConfiguration and the
// MutatingWebhookConfiguration when --webhook-configuration-name is not
// given: shell-operator's default, so that its manifests (which may grant
// RBAC on that name) work unchanged.
const DefaultConfigurationName = "shell-operator-hooks"

// The modes of --webhook-configuration-mode.
const (
	// ModeManaged: the operator creates each configuration when a binding
	// of its kind appears, keeps it, and deletes it when the last goes.
	// Its RBAC needs create on the configurations' kinds, which RBAC
	// cannot limit to a name.
	ModeManaged = "managed"
	// ModeExisting: the configurations are made beforehand (by the chart)
	// under the expected name; the operator only fills in their webhooks
	// (rules, clientConfig with its caBundle) and empties them when the
	// last binding of their kind goes. It never creates or deletes one,
	// so its RBAC needs only get and patch, limited to the names.
	ModeExisting = "existing"
)

// CheckConfigurationMode says whether mode is one of
// --webhook-configuration-mode's values ("" is ModeManaged).
func CheckConfigurationMode(mode string) error {
	switch mode {
	case "", ModeManaged, ModeExisting:
		return nil
	}
	return fmt.Errorf("--webhook-configuration-mode=%s: use %s (the operator creates and deletes the webhook configurations) or %s (they exist beforehand, made by the chart; the operator only fills them in)",
		mode, ModeManaged, ModeExisting)
}

// Registration says how the webhook configurations are named and marked,
// and where the API server reaches the webhooks: by Service, or by URL (an
// operator outside the cluster).
type Registration struct {
	// Name is the name of both configurations.
	Name string
	// Mode is ModeManaged ("" too) or ModeExisting.
	Mode string
	// ServiceNamespace and ServiceName name the Service in front of the
	// operator's webhook listener (port 443); unused when URL is set.
	ServiceNamespace, ServiceName string
	// URL is https://HOST[:PORT] of the listener; the binding's path is
	// appended.
	URL string
	// CABundle is the PEM of the CA that signed the serving certificate.
	CABundle []byte
	// FailurePolicy applies to bindings that set none: Fail or Ignore.
	FailurePolicy string
	// Labels and Annotations are set on both configurations (cert-manager's
	// CA injector reads an annotation).
	Labels, Annotations map[string]string
	// IgnoreFailures sets every webhook's failurePolicy to Ignore, the
	// bindings' own included: a dry run never blocks a request, even when
	// the operator is gone.
	IgnoreFailures bool
}

// The defaults of a binding's webhook, as shell-operator sets them.
const (
	defaultSideEffects    = "None"
	defaultTimeoutSeconds = int64(10)
)

var (
	upperRe  = regexp.MustCompile(`([A-Z])`)
	unsafeRe = regexp.MustCompile(`[^a-z0-9-/]`)
	dashesRe = regexp.MustCompile(`-+`)
)

// Path is the URL path a binding is served at, as shell-operator names it:
// /hooks/ and the binding's name with capitals turned into -lowercase and
// every character other than a-z, 0-9, - and / into -.
func Path(binding string) string {
	s := upperRe.ReplaceAllString(binding, "-$1")
	s = unsafeRe.ReplaceAllString(strings.ToLower(s), "-")
	return "/hooks/" + dashesRe.ReplaceAllString(s, "-")
}

// Configuration returns the MutatingWebhookConfiguration (mutating) or the
// ValidatingWebhookConfiguration with one webhook per binding, in the order
// given. It fails when two bindings have the same name or the same path,
// naming both hooks: the API server requires unique names in a
// configuration, and a path must lead to one binding.
func (r Registration) Configuration(mutating bool, bindings []Admission) (*unstructured.Unstructured, error) {
	kind, list := "ValidatingWebhookConfiguration", "kubernetesValidating"
	if mutating {
		kind, list = "MutatingWebhookConfiguration", "kubernetesMutating"
	}
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("--webhook-url %q: want https://HOST[:PORT], without a path", r.URL)
		}
	} else if r.ServiceName == "" || r.ServiceNamespace == "" {
		return nil, fmt.Errorf("the webhooks need a Service (--webhook-service-name and --operator-namespace) or --webhook-url")
	}
	names, paths := map[string]string{}, map[string]string{}
	webhooks := make([]any, 0, len(bindings))
	for _, a := range bindings {
		b := a.Binding
		where := fmt.Sprintf("hook %s, %s binding %q", a.Hook, list, b.Name)
		if first, dup := names[b.Name]; dup {
			return nil, fmt.Errorf("%s: %s has a binding of the same name; webhook names must be unique across all hooks", where, first)
		}
		names[b.Name] = where
		path := Path(b.Name)
		if first, dup := paths[path]; dup {
			return nil, fmt.Errorf("%s: it would be served at %s, as %s is; rename one of them", where, path, first)
		}
		paths[path] = where
		webhooks = append(webhooks, r.webhook(b, path, mutating))
	}
	meta := map[string]any{"name": r.Name}
	if len(r.Labels) > 0 {
		meta["labels"] = stringMap(r.Labels)
	}
	if len(r.Annotations) > 0 {
		meta["annotations"] = stringMap(r.Annotations)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       kind,
		"metadata":   meta,
		"webhooks":   webhooks,
	}}, nil
}

// webhook is the entry of one binding.
func (r Registration) webhook(b hook.WebhookBinding, path string, mutating bool) map[string]any {
	raw := b.Raw
	cc := map[string]any{}
	if r.URL != "" {
		cc["url"] = strings.TrimSuffix(r.URL, "/") + path
	} else {
		cc["service"] = map[string]any{"namespace": r.ServiceNamespace, "name": r.ServiceName, "path": path}
	}
	if len(r.CABundle) > 0 {
		cc["caBundle"] = base64.StdEncoding.EncodeToString(r.CABundle)
	}
	failure := r.FailurePolicy
	if failure == "" {
		failure = "Fail"
	}
	if r.IgnoreFailures {
		failure = "Ignore"
		raw = maps.Clone(raw)
		delete(raw, "failurePolicy")
	}
	w := map[string]any{
		"name":                    b.Name,
		"clientConfig":            cc,
		"admissionReviewVersions": []any{"v1"},
		"matchPolicy":             "Equivalent",
		"failurePolicy":           or(raw["failurePolicy"], failure),
		"sideEffects":             or(raw["sideEffects"], defaultSideEffects),
		"timeoutSeconds":          or(raw["timeoutSeconds"], defaultTimeoutSeconds),
	}
	for from, to := range map[string]string{"rules": "rules", "labelSelector": "objectSelector", "matchConditions": "matchConditions"} {
		if v, ok := raw[from]; ok {
			w[to] = v
		}
	}
	if ns, ok := raw["namespace"].(map[string]any); ok {
		if sel, ok := ns["labelSelector"]; ok {
			w["namespaceSelector"] = sel
		}
	}
	// Left out when the binding sets none, so that the API server's
	// default (Never) applies, and a reload that removes it from the
	// binding removes it from the webhook.
	if p := b.ReinvocationPolicy(); mutating && p != "" {
		w["reinvocationPolicy"] = p
	}
	return w
}

// or returns v, or def when v is missing.
func or(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

// stringMap converts labels or annotations to the values of unstructured
// content.
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// syncExisting is Sync in ModeExisting: each configuration of r.Name that
// has bindings must exist, and gets their webhooks (a merge patch, which
// never creates); one whose kind has no binding left is emptied, not
// deleted. A configuration of a kind the operator may not read (its RBAC
// has none for a kind no hook uses) is left alone.
func syncExisting(ctx context.Context, dyn dynamic.Interface, r Registration, validating, mutating []Admission, log logrus.FieldLogger) error {
	for _, m := range []bool{false, true} {
		bindings := validating
		if m {
			bindings = mutating
		}
		gvr := configurationResources[m]
		kind := configurationKinds[m]
		res := dyn.Resource(gvr)
		webhooks := []any{}
		if len(bindings) == 0 {
			cur, err := res.Get(ctx, r.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read %s %s: %w", kind, r.Name, err)
			}
			if old, _, _ := unstructured.NestedSlice(cur.Object, "webhooks"); len(old) == 0 {
				continue
			}
		} else {
			u, err := r.Configuration(m, bindings)
			if err != nil {
				return err
			}
			webhooks, _, _ = unstructured.NestedSlice(u.Object, "webhooks")
		}
		patch, err := json.Marshal(map[string]any{"webhooks": webhooks})
		if err != nil {
			return err
		}
		_, err = res.Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case apierrors.IsNotFound(err) && len(bindings) == 0:
			continue // gone meanwhile: nothing to empty
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%s %s does not exist: with --webhook-configuration-mode=%s the operator only fills in configurations made beforehand; "+
				"create it (the chart does, or kubectl apply one with that name and no webhooks), or run with --webhook-configuration-mode=%s",
				kind, r.Name, ModeExisting, ModeManaged)
		case apierrors.IsForbidden(err):
			return fmt.Errorf("patch %s %s: %w (the operator's RBAC needs get and patch on %s named %s: hook-operator rbac --webhook-configuration-mode=%s)",
				kind, r.Name, err, gvr.Resource, r.Name, ModeExisting)
		case err != nil:
			return fmt.Errorf("patch %s %s: %w", kind, r.Name, err)
		}
		if len(bindings) == 0 {
			log.WithFields(logrus.Fields{"configuration": r.Name, "kind": kind}).Info("webhook configuration emptied: no binding of its kind is left (not deleted: --webhook-configuration-mode=existing)")
			continue
		}
		log.WithFields(logrus.Fields{"configuration": r.Name, "kind": kind, "webhooks": len(bindings)}).Info("webhook configuration applied")
	}
	return nil
}

var configurationKinds = map[bool]string{false: "ValidatingWebhookConfiguration", true: "MutatingWebhookConfiguration"}
