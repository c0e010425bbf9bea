package webhook

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

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
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
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
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s:\n%s", what, show())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
