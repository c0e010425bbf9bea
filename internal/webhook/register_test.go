package webhook

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/hook"
)

func TestPath(t *testing.T) {
	for in, want := range map[string]string{
		"private-repo-policy.example.com": "/hooks/private-repo-policy-example-com",
		"CheckPods":                       "/hooks/-check-pods",
		"a_b  c":                          "/hooks/a-b-c",
	} {
		if got := Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q (shell-operator's)", in, got, want)
		}
	}
}

func admission(t *testing.T, hookPath, spec string) Admission {
	t.Helper()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(spec), &raw); err != nil {
		t.Fatal(err)
	}
	name, _ := raw["name"].(string)
	return Admission{Hook: hookPath, Binding: hook.WebhookBinding{Common: hook.Common{Name: name}, Raw: raw}}
}

func TestConfiguration(t *testing.T) {
	check := admission(t, "policy.sh", `
name: check.example.com
rules:
- {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE, UPDATE]}
namespace: {labelSelector: {matchLabels: {policy: "on"}}}
labelSelector: {matchLabels: {checked: "yes"}}
failurePolicy: Ignore
timeoutSeconds: 5
matchConditions:
- {name: not-kube-system, expression: "request.namespace != 'kube-system'"}
`)
	plain := admission(t, "other.sh", `
name: plain.example.com
rules:
- {apiGroups: [apps], apiVersions: ["*"], resources: [deployments], operations: ["*"]}
`)
	reg := Registration{Name: "shell-operator-hooks", ServiceNamespace: "ops", ServiceName: "hook-operator-webhook",
		CABundle: []byte("PEM"), Annotations: map[string]string{"cert-manager.io/inject-ca-from": "ops/webhook"}}
	u, err := reg.Configuration(false, []Admission{check, plain})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := yaml.Marshal(u.Object)
	want := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  annotations:
    cert-manager.io/inject-ca-from: ops/webhook
  name: shell-operator-hooks
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    caBundle: ` + base64.StdEncoding.EncodeToString([]byte("PEM")) + `
    service:
      name: hook-operator-webhook
      namespace: ops
      path: /hooks/check-example-com
  failurePolicy: Ignore
  matchConditions:
  - expression: request.namespace != 'kube-system'
    name: not-kube-system
  matchPolicy: Equivalent
  name: check.example.com
  namespaceSelector:
    matchLabels:
      policy: "on"
  objectSelector:
    matchLabels:
      checked: "yes"
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - configmaps
  sideEffects: None
  timeoutSeconds: 5
- admissionReviewVersions:
  - v1
  clientConfig:
    caBundle: UEVN
    service:
      name: hook-operator-webhook
      namespace: ops
      path: /hooks/plain-example-com
  failurePolicy: Fail
  matchPolicy: Equivalent
  name: plain.example.com
  rules:
  - apiGroups:
    - apps
    apiVersions:
    - '*'
    operations:
    - '*'
    resources:
    - deployments
  sideEffects: None
  timeoutSeconds: 10
`
	if string(got) != want {
		t.Errorf("the configuration:\n%s\nwant:\n%s", got, want)
	}
	if u.DeepCopy() == nil {
		t.Error("the configuration must be unstructured content that can be copied")
	}

	reg.URL = "https://127.0.0.1:9680"
	u, err = reg.Configuration(true, []Admission{plain})
	if err != nil {
		t.Fatal(err)
	}
	cc := u.Object["webhooks"].([]any)[0].(map[string]any)["clientConfig"].(map[string]any)
	if u.GetKind() != "MutatingWebhookConfiguration" || cc["url"] != "https://127.0.0.1:9680/hooks/plain-example-com" || cc["service"] != nil {
		t.Errorf("by URL: %v %v", u.GetKind(), cc)
	}

	for _, tc := range []struct {
		name     string
		reg      Registration
		bindings []Admission
		err      string
	}{
		{"same name in two hooks", reg, []Admission{plain, admission(t, "third.sh", "name: plain.example.com")}, "hook third.sh, kubernetesValidating binding \"plain.example.com\": hook other.sh"},
		{"same path", reg, []Admission{plain, admission(t, "third.sh", "name: plain_example.com")}, "would be served at /hooks/plain-example-com"},
		{"URL with a path", Registration{URL: "https://h:1/x"}, nil, "without a path"},
		{"URL not https", Registration{URL: "http://h:1"}, nil, "https://HOST"},
		{"nowhere", Registration{}, nil, "need a Service"},
	} {
		_, err := tc.reg.Configuration(false, tc.bindings)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		}
	}
}

// A mutating binding's reinvocationPolicy reaches its webhook as given; a
// binding without one leaves the field out, so that the API server's
// default (Never) applies; a validating configuration never carries it.
func TestConfigurationReinvocationPolicy(t *testing.T) {
	rules := "\nrules:\n- {apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}\n"
	ifNeeded := admission(t, "defaults.sh", "name: defaults.example.com\nreinvocationPolicy: IfNeeded"+rules)
	never := admission(t, "defaults.sh", "name: never.example.com\nreinvocationPolicy: Never"+rules)
	unset := admission(t, "labels.sh", "name: labels.example.com"+rules)
	reg := Registration{Name: "shell-operator-hooks", URL: "https://127.0.0.1:9680"}

	u, err := reg.Configuration(true, []Admission{ifNeeded, never, unset})
	if err != nil {
		t.Fatal(err)
	}
	webhooks := u.Object["webhooks"].([]any)
	for i, want := range []any{"IfNeeded", "Never", nil} {
		w := webhooks[i].(map[string]any)
		if got := w["reinvocationPolicy"]; got != want {
			t.Errorf("webhook %s: reinvocationPolicy %v, want %v", w["name"], got, want)
		}
	}

	// A binding can only have it when mutating (the hook's configuration
	// is checked at load); a validating configuration built from one
	// still leaves it out, as the API server's ValidatingWebhook has none.
	u, err = reg.Configuration(false, []Admission{ifNeeded})
	if err != nil {
		t.Fatal(err)
	}
	if w := u.Object["webhooks"].([]any)[0].(map[string]any); w["reinvocationPolicy"] != nil {
		t.Errorf("validating webhook has reinvocationPolicy %v", w["reinvocationPolicy"])
	}
}

// With --webhook-configuration-mode=existing the operator never creates
// or deletes a webhook configuration: a missing one is an error naming
// it; one made beforehand gets the bindings' webhooks (its metadata, the
// chart's labels, untouched); the last binding gone empties it.
func TestSyncExistingNeverCreatesOrDeletes(t *testing.T) {
	ctx := context.Background()
	log, _ := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	check := admission(t, "policy.sh", `
name: check.example.com
rules:
- {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}
`)
	reg := Registration{Name: "ops-hooks", Mode: ModeExisting, ServiceNamespace: "ops", ServiceName: "webhook", CABundle: []byte("PEM"),
		Labels: map[string]string{"from": "flags"}}
	validating := configurationResources[false]

	// Missing: an error naming the configuration and what to do.
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	err := Sync(ctx, client, reg, []Admission{check}, nil, log)
	if err == nil || !strings.Contains(err.Error(), "ValidatingWebhookConfiguration ops-hooks does not exist") ||
		!strings.Contains(err.Error(), "--webhook-configuration-mode=existing") {
		t.Errorf("a missing configuration: %v", err)
	}
	assertNoCreateOrDelete(t, client.Actions())

	// Made beforehand, as the chart makes it: no webhooks, Helm's label.
	made := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": "ops-hooks", "labels": map[string]any{managedBy: "Helm"}},
	}}
	client = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), made)
	if err := Sync(ctx, client, reg, []Admission{check}, nil, log); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(validating).Get(ctx, "ops-hooks", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	webhooks, _, _ := unstructured.NestedSlice(got.Object, "webhooks")
	if len(webhooks) != 1 {
		t.Fatalf("webhooks %v, want the binding's", webhooks)
	}
	cc := webhooks[0].(map[string]any)["clientConfig"].(map[string]any)
	if cc["caBundle"] != "UEVN" || cc["service"].(map[string]any)["path"] != "/hooks/check-example-com" {
		t.Errorf("clientConfig %v", cc)
	}
	if l := got.GetLabels(); l[managedBy] != "Helm" || l["from"] != "" {
		t.Errorf("labels %v: the chart's metadata must stay as it made it", l)
	}
	assertNoCreateOrDelete(t, client.Actions())

	// The last binding gone: emptied, still there.
	if err := Sync(ctx, client, reg, nil, nil, log); err != nil {
		t.Fatal(err)
	}
	got, err = client.Resource(validating).Get(ctx, "ops-hooks", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the configuration is gone: %v", err)
	}
	if webhooks, _, _ := unstructured.NestedSlice(got.Object, "webhooks"); len(webhooks) != 0 {
		t.Errorf("webhooks left: %v", webhooks)
	}
	assertNoCreateOrDelete(t, client.Actions())

	// The same in managed mode creates, for contrast: what the existing
	// mode's RBAC does without.
	client = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	managed := reg
	managed.Mode = ModeManaged
	_ = Sync(ctx, client, managed, []Admission{check}, nil, log)
	if !hasVerb(client.Actions(), "patch") {
		t.Errorf("managed mode wrote nothing: %v", client.Actions())
	}
}

func TestCheckConfigurationMode(t *testing.T) {
	for _, ok := range []string{"", ModeManaged, ModeExisting} {
		if err := CheckConfigurationMode(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := CheckConfigurationMode("chart"); err == nil || !strings.Contains(err.Error(), "use managed") {
		t.Errorf("chart: %v", err)
	}
}

func assertNoCreateOrDelete(t *testing.T, actions []k8stesting.Action) {
	t.Helper()
	for _, a := range actions {
		if a.GetVerb() == "create" || a.GetVerb() == "delete" {
			t.Errorf("%s %s in existing mode", a.GetVerb(), a.GetResource().Resource)
		}
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetPatchType() == "application/apply-patch+yaml" {
			t.Errorf("server-side apply of %s in existing mode: it would create a missing configuration", a.GetResource().Resource)
		}
	}
}

func hasVerb(actions []k8stesting.Action, verb string) bool {
	for _, a := range actions {
		if a.GetVerb() == verb {
			return true
		}
	}
	return false
}
