package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The local cluster's API server accepts deploy/ (server-side dry-run: the
// schemas, admission and the restricted Pod Security Standard are checked,
// nothing is stored).
//
// A server-side dry-run creates nothing, so the objects in the namespace
// hook-operator would be refused because that namespace does not exist.
// Creating hook-operator for real could collide with other tests, so the
// test renders deploy/ through an overlay that moves it into a fresh
// namespace, the way a user deploys it into a namespace of their own (see
// the docs): kustomize renames the Namespace and points the bindings'
// ServiceAccount there too.
func TestIntegrationKustomizeServerDryRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)

	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: " + ns + "\nresources:\n- " + base + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomize(t, overlay)
	checkDeployment(t, objs, deployment{
		namespace:      ns,
		hooksConfigMap: one(t, objs, "ConfigMap").GetName(),
		hooksMount:     "/hooks/custom",
		rendered:       true,
	})
	serverDryRun(t, c, run(t, overlay, nil, "kubectl", "kustomize", overlay), len(objs))
}

// restrict makes ns enforce, and warn about, the restricted Pod Security
// Standard, as deploy/namespace.yaml does.
func restrict(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/warn":"restricted"}}}`
	if _, err := c.Client.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serverDryRun applies manifests with `kubectl apply --dry-run=server` and
// checks that the API server accepted all n objects without a warning.
func serverDryRun(t *testing.T, c *testcluster.Cluster, manifests []byte, n int) {
	t.Helper()
	cmd := []string{"--kubeconfig", c.Kubeconfig, "apply", "--dry-run=server", "-f", "-"}
	stdout, stderr := runIn(t, "", manifests, "kubectl", cmd...)
	out := string(stdout)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	accepted := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "(server dry run)") {
			accepted++
		}
	}
	if accepted != n {
		t.Errorf("the API server accepted %d of %d objects:\n%s", accepted, n, out)
	}
	for _, l := range strings.Split(string(stderr), "\n") {
		// Objects that exist already (the shared CRDs) were not created by
		// a client-side apply, which kubectl mentions; anything else counts.
		if strings.HasPrefix(l, "Warning") && !strings.Contains(l, "last-applied-configuration") {
			t.Errorf("the API server warned: %s", l)
		}
	}
	t.Logf("kubectl apply --dry-run=server:\n%s", out)
}

// The webhook component (deploy/webhook) adds the webhook Service, the
// listener's port and settings, and the Role of the self-signed
// certificate's Secret, and the API server accepts the result.
func TestIntegrationKustomizeWebhookComponent(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	overlay := t.TempDir()
	deployDir := filepath.Join(repoRoot(t), "deploy")
	base, err := filepath.Rel(overlay, deployDir)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: " + ns + "\nresources:\n- " + base + "\ncomponents:\n- " + filepath.Join(base, "webhook") + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomize(t, overlay)
	webhookService(t, objs)
	container, env := operatorContainer(t, objs)
	if env["HOOK_OPERATOR_WEBHOOK_SELF_SIGNED"] != "true" || env["HOOK_OPERATOR_WEBHOOK_LISTEN_ADDRESS"] != ":9680" || env["HOOK_OPERATOR_WEBHOOK_SERVICE_NAME"] != "hook-operator-webhook" {
		t.Errorf("the webhook settings: %v", env)
	}
	webhookPort := false
	for _, p := range container["ports"].([]any) {
		if p := p.(map[string]any); p["name"] == "webhook" && fmt.Sprint(p["containerPort"]) == "9680" {
			webhookPort = true
		}
	}
	if !webhookPort {
		t.Errorf("no container port webhook (9680): %v", container["ports"])
	}
	checkCertificateRole(t, objs, ns)
	serverDryRun(t, c, run(t, overlay, nil, "kubectl", "kustomize", overlay), len(objs))
}
