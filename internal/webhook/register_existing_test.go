package webhook

import (
	"context"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

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
