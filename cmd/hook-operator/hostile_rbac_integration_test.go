package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The RBAC `hook-operator rbac` generates for a folder with only a
// validating hook, applied on the local cluster and used through its
// ServiceAccount (impersonated): issue 43 found that it could create an
// arbitrary MutatingWebhookConfiguration, a cluster takeover.
//   - managed mode: creating a MutatingWebhookConfiguration is forbidden
//     (the create it keeps on ValidatingWebhookConfigurations, which RBAC
//     cannot limit to a name, is marked SENSITIVE in the output);
//   - existing mode: creating any webhook configuration is forbidden; the
//     operator, started with that RBAC and
//     --webhook-configuration-mode=existing, refuses to start while its
//     configuration is missing, naming it; with the configuration made
//     beforehand (as the chart makes it) it fills it in, the API server
//     calls the hook, and the configuration's own metadata stays.
//
// Every create tried as the ServiceAccount is a dry run, so that a
// regression leaves no webhook behind that other tests' requests reach.
func TestIntegrationHostileRBACCannotCreateWebhookConfigurations(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	ctx := context.Background()
	configName := "hook-operator-test-" + ns
	validating, mutating := validatingConfigurations, mutatingConfigurations
	deleteConfigurationsAtEnd(t, c, configName)

	hooks := t.TempDir()
	selectors := fmt.Sprintf(`"namespace":{"labelSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}}},"labelSelector":{"matchLabels":{"rbac-test":"yes"}}`, ns)
	writeHook(t, hooks, "policy.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"values.rbac-test.example.com",`+
		`"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}],`+selectors+`}]}`, `
echo '{"allowed": false, "message": "denied by the policy hook"}' >"$VALIDATING_RESPONSE_PATH"
`))

	// createAs tries, as the ServiceAccount of kubeconfig, to create a
	// webhook configuration (a dry run) and returns the error.
	createAs := func(kubeconfig string, gvr schema.GroupVersionResource, kind, name string) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		must(t, err)
		dyn, err := dynamic.NewForConfig(cfg)
		must(t, err)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": name},
		}}
		_, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	// Managed mode (the default).
	out, err := exec.Command(bin, "rbac", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig, "--webhook-configuration-name", configName).Output()
	must(t, err)
	if strings.Contains(string(out), "mutatingwebhookconfigurations") || !strings.Contains(string(out), "# SENSITIVE: create on validatingwebhookconfigurations") {
		t.Errorf("managed mode's RBAC for a validating hook:\n%s", out)
	}
	kubeconfig := leastPrivilege(t, c, bin, hooks, ns, "--webhook-configuration-name", configName)
	if err := createAs(kubeconfig, mutating, "MutatingWebhookConfiguration", "takeover-"+ns); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount of a validating-only folder creates a MutatingWebhookConfiguration: %v", err)
	}

	// Existing mode: no create at all. The same roles, applied again with
	// the existing mode's rules.
	kubeconfig = leastPrivilege(t, c, bin, hooks, ns, "--webhook-configuration-name", configName, "--webhook-configuration-mode", "existing")
	for _, k := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{mutating, "MutatingWebhookConfiguration"}, {validating, "ValidatingWebhookConfiguration"}} {
		if err := createAs(kubeconfig, k.gvr, k.kind, "takeover-"+ns); !apierrors.IsForbidden(err) {
			t.Errorf("existing mode: the ServiceAccount creates a %s: %v", k.kind, err)
		}
		if err := createAs(kubeconfig, k.gvr, k.kind, configName); !apierrors.IsForbidden(err) {
			t.Errorf("existing mode: the ServiceAccount creates the %s %s itself: %v", k.kind, configName, err)
		}
	}

	_, certs, port := servingSetup(t)
	args := append(webhookFlags(certs, port, configName), "--webhook-configuration-mode", "existing")

	// Missing: start fails, naming the configuration.
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	failed, err := exec.CommandContext(runCtx, bin, append([]string{"start", "--hooks-dir", hooks, "--kubeconfig", kubeconfig,
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", filepath.Join(t.TempDir(), "debug.sock")}, args...)...).CombinedOutput()
	if err == nil || runCtx.Err() != nil || !strings.Contains(string(failed), "ValidatingWebhookConfiguration "+configName+" does not exist") {
		t.Fatalf("start without the configuration: %v\n%s", err, failed)
	}

	// Made beforehand, as the chart makes it.
	made := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": configName, "labels": map[string]any{"app.kubernetes.io/managed-by": "Helm"}},
		"webhooks": []any{},
	}}
	_, err = c.Dynamic.Resource(validating).Create(ctx, made, metav1.CreateOptions{})
	must(t, err)
	o := startObserved(t, bin, kubeconfig, hooks, args...)
	waitUntil(t, "the configuration filled in", func() bool {
		return strings.Contains(o.logs.String(), `"msg":"webhook configuration applied"`)
	}, o.logs.String)
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checked, namespace: %s, labels: {rbac-test: \"yes\"}}\n", ns)
	waitUntil(t, "the hook's denial", func() bool {
		msg, err := kubectlApply(c.Kubeconfig, cm)
		return err != nil && strings.Contains(msg, "denied by the policy hook")
	}, o.logs.String)
	got, err := c.Dynamic.Resource(validating).Get(ctx, configName, metav1.GetOptions{})
	must(t, err)
	if got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the configuration's labels changed: %v", got.GetLabels())
	}
	if _, err := c.Dynamic.Resource(mutating).Get(ctx, configName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a MutatingWebhookConfiguration %s exists: %v", configName, err)
	}
	if strings.Contains(o.logs.String(), "forbidden") {
		t.Errorf("the existing mode's RBAC lacks something:\n%s", o.logs.String())
	}
}
