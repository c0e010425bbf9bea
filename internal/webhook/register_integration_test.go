package webhook

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/metadata"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The configurations built for bindings are what the real API server
// accepts (names, selectors, CEL match conditions, by Service and by URL),
// and its validation refuses a webhook name that is not a qualified name,
// which the hook's author then sees. Dry-run: nothing is registered, so no
// other test's requests go to a webhook.
func TestIntegrationConfigurationAccepted(t *testing.T) {
	c := testcluster.Get(t)
	ctx := context.Background()
	check := admission(t, "policy.sh", `
name: check.example.com
rules:
- {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE, UPDATE]}
namespace: {labelSelector: {matchLabels: {policy: "on"}}}
labelSelector: {matchExpressions: [{key: checked, operator: Exists}]}
timeoutSeconds: 5
matchConditions:
- {name: not-kube-system, expression: "request.namespace != 'kube-system'"}
`)
	caBundle := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name     string
		reg      Registration
		mutating bool
	}{
		{"validating by Service", Registration{Name: "hook-operator-test-dry-run", ServiceNamespace: "ops", ServiceName: "webhook", CABundle: caBundle}, false},
		{"mutating by URL", Registration{Name: "hook-operator-test-dry-run", URL: "https://127.0.0.1:9680", CABundle: caBundle,
			Labels: map[string]string{"app": "hook-operator"}}, true},
	} {
		u, err := tc.reg.Configuration(tc.mutating, []Admission{check})
		if err != nil {
			t.Fatal(err)
		}
		res := strings.ToLower(u.GetKind()) + "s"
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
		if _, err := c.Dynamic.Resource(gvr).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("%s: the API server refuses the configuration: %v", tc.name, err)
		}
	}

	bad := admission(t, "policy.sh", "name: check\nrules: []")
	u, err := Registration{Name: "hook-operator-test-dry-run", URL: "https://127.0.0.1:9680"}.Configuration(false, []Admission{bad})
	if err != nil {
		t.Fatal(err)
	}
	gvr := configurationResources[false]
	_, err = c.Dynamic.Resource(gvr).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "webhooks[0].name") {
		t.Errorf("a webhook name without dots: %v, want the API server's error naming webhooks[0].name", err)
	}
}

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
	log, _ := logtest.NewNullLogger()
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

// The conversions an operator registered and no binding names any more
// are found from the CRDs' metadata, read a page at a time (here a CRD a
// page, so that the pages go on past every CRD of this test), and given
// back; the one still named keeps its webhook. The CRDs are the test's
// own, and have one version, so the API server never calls the webhook.
func TestIntegrationConversionsReleasedPageByPage(t *testing.T) {
	c := testcluster.Get(t)
	meta, err := metadata.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	old := crdPage
	crdPage = 1
	t.Cleanup(func() { crdPage = old })
	var crds []string
	for _, kind := range []string{"Kept", "Dropped", "Gone"} {
		gvr := c.InstallCRD(t, testcluster.CRD{Kind: kind})
		crds = append(crds, gvr.GroupResource().String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := Registration{Name: "release-" + rand.String(6), URL: "https://127.0.0.1:9681"}
	log, _ := logtest.NewNullLogger()
	if err := SyncConversions(ctx, c.Dynamic, meta, r, crds, log); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if got := strategy(t, c, crd); got != "Webhook" {
			t.Fatalf("CRD %s: conversion strategy %q after the registration; want Webhook", crd, got)
		}
	}
	if err := SyncConversions(ctx, c.Dynamic, meta, r, crds[:1], log); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"Webhook", "None", "None"} {
		if got := strategy(t, c, crds[i]); got != want {
			t.Errorf("CRD %s: conversion strategy %q; want %s", crds[i], got, want)
		}
	}
}

func strategy(t *testing.T, c *testcluster.Cluster, crd string) string {
	t.Helper()
	got, err := c.Dynamic.Resource(crdResource).Get(context.Background(), crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "strategy")
	return s
}

// A dry run's configuration follows its bindings on the real API server:
// written with failurePolicy Ignore at start, deleted when the last
// admission binding goes, written again when one comes back, and deleted
// when the server stops. The webhook matches only ConfigMaps of the
// test's namespace with a label nobody sets, so no other request reaches
// it.
func TestIntegrationServerDryRunFollowsChanges(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	dir := t.TempDir()
	writePair(t, dir, 1)
	addr := freeAddress(t)
	name := "hook-operator-test-" + ns
	gvr := configurationResources[false]
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(gvr).Delete(context.Background(), name+"-dry-run", metav1.DeleteOptions{})
	})
	bindings := Bindings{Validating: []Admission{admission(t, "policy.sh", fmt.Sprintf(`
name: check.%s.example.com
failurePolicy: Fail
rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}}
labelSelector: {matchLabels: {never-set: "yes"}}
`, ns, ns))}}
	log, logs := jsonLog()
	hooks := newFakeHooks(bindings)
	s, err := NewServer(Options{
		ListenAddress: addr, URL: "https://" + addr, Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt"),
		ConfigurationName: name, Register: true, DryRun: true, Dynamic: c.Dynamic,
		MaxConnections: 8, MaxConcurrent: 2, TLSMinVersion: "1.2", Log: log,
	}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	get := func() (*unstructured.Unstructured, error) {
		return c.Dynamic.Resource(gvr).Get(context.Background(), name+"-dry-run", metav1.GetOptions{})
	}
	exists := func(want bool) func() bool {
		return func() bool {
			_, err := get()
			return (err == nil) == want && (want || apierrors.IsNotFound(err))
		}
	}
	<-s.Started()
	u, err := get()
	if err != nil {
		t.Fatalf("the dry run's configuration after start: %v", err)
	}
	webhooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	if len(webhooks) != 1 || webhooks[0].(map[string]any)["failurePolicy"] != "Ignore" {
		t.Errorf("the dry run's webhooks: %v, want one with failurePolicy Ignore", webhooks)
	}

	hooks.set(Bindings{})
	waitForCluster(t, "the configuration deleted with its last binding", exists(false), logs.String)
	hooks.set(bindings)
	waitForCluster(t, "the configuration written again", exists(true), logs.String)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
	if !exists(false)() {
		t.Error("the dry run's configuration is left after the server stopped")
	}
}

// waitForCluster waits for cond as waitFor does, with the generous
// deadline of a change on a busy API server.
func waitForCluster(t *testing.T, what string, cond func() bool, show func() string) {
	t.Helper()
	poll.UntilShowing(t, 60*time.Second, what, cond, show)
}
