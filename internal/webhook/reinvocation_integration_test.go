package webhook

import (
	"context"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The real API server keeps a mutating binding's reinvocationPolicy in the
// registered MutatingWebhookConfiguration, in both configuration modes; a
// binding changed to leave it out (a reload calls Sync again) gets the API
// server's default back, Never, rather than keeping IfNeeded.
//
// The webhook only matches namespaces with a label no namespace has, and
// fails open, so no other test's request reaches it.
func TestIntegrationReinvocationPolicyRegistered(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	log := logrus.New()
	log.SetOutput(io.Discard)
	binding := func(policy string) Admission {
		spec := `
name: defaults.reinvocation-test.example.com
failurePolicy: Ignore
namespace: {labelSelector: {matchLabels: {reinvocation-test: ` + ns + `}}}
rules:
- {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}
`
		if policy != "" {
			spec += "reinvocationPolicy: " + policy + "\n"
		}
		return admission(t, "defaults.sh", spec)
	}
	res := c.Dynamic.Resource(configurationResources[true])
	registered := func(name string) any {
		t.Helper()
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		webhooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		if len(webhooks) != 1 {
			t.Fatalf("%s: webhooks %v, want the binding's", name, webhooks)
		}
		return webhooks[0].(map[string]any)["reinvocationPolicy"]
	}

	for _, mode := range []string{ModeManaged, ModeExisting} {
		reg := Registration{Name: "reinvocation-" + mode + "-" + ns, Mode: mode, URL: "https://127.0.0.1:1"}
		t.Cleanup(func() { _ = res.Delete(context.Background(), reg.Name, metav1.DeleteOptions{}) })
		if mode == ModeExisting {
			// As the chart makes it: no webhooks.
			made := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
				"metadata": map[string]any{"name": reg.Name},
			}}
			if _, err := res.Create(ctx, made, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, step := range []struct{ policy, want string }{
			{"IfNeeded", "IfNeeded"},
			{"", "Never"}, // left out after a change: the default again
			{"IfNeeded", "IfNeeded"},
			{"Never", "Never"},
		} {
			if err := Sync(ctx, c.Dynamic, reg, nil, []Admission{binding(step.policy)}, log); err != nil {
				t.Fatalf("%s mode, reinvocationPolicy %q: %v", mode, step.policy, err)
			}
			if got := registered(reg.Name); got != step.want {
				t.Errorf("%s mode, binding with reinvocationPolicy %q: registered %v, want %s", mode, step.policy, got, step.want)
			}
		}
	}
}
