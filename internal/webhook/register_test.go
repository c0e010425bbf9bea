package webhook

import (
	"encoding/base64"
	"strings"
	"testing"

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
