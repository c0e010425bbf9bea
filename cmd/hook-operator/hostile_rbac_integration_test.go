package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
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
	h := newHarness(t)
	ctx := context.Background()
	validating, mutating := validatingConfigurations, mutatingConfigurations
	configName := h.denyingHook(t, "rbac-test")

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
	out, err := exec.Command(h.bin, "rbac", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig, "--webhook-configuration-name", configName).Output()
	must(t, err)
	if strings.Contains(string(out), "mutatingwebhookconfigurations") || !strings.Contains(string(out), "# SENSITIVE: create on validatingwebhookconfigurations") {
		t.Errorf("managed mode's RBAC for a validating hook:\n%s", out)
	}
	kubeconfig := leastPrivilege(t, h.c, h.bin, h.hooks, h.ns, "--webhook-configuration-name", configName)
	if err := createAs(kubeconfig, mutating, "MutatingWebhookConfiguration", "takeover-"+h.ns); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount of a validating-only folder creates a MutatingWebhookConfiguration: %v", err)
	}

	// Existing mode: no create at all. The same roles, applied again with
	// the existing mode's rules.
	kubeconfig = leastPrivilege(t, h.c, h.bin, h.hooks, h.ns, "--webhook-configuration-name", configName, "--webhook-configuration-mode", "existing")
	for _, k := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{mutating, "MutatingWebhookConfiguration"}, {validating, "ValidatingWebhookConfiguration"}} {
		if err := createAs(kubeconfig, k.gvr, k.kind, "takeover-"+h.ns); !apierrors.IsForbidden(err) {
			t.Errorf("existing mode: the ServiceAccount creates a %s: %v", k.kind, err)
		}
		if err := createAs(kubeconfig, k.gvr, k.kind, configName); !apierrors.IsForbidden(err) {
			t.Errorf("existing mode: the ServiceAccount creates the %s %s itself: %v", k.kind, configName, err)
		}
	}

	_, certs, port := servingSetup(t)
	args := append(webhookFlags(certs, port, configName), "--webhook-configuration-mode", "existing")

	// Missing: start fails, naming the configuration.
	failed := startFails(t, h.hooks, operatorOpts{kubeconfig: kubeconfig, flags: args}, 60*time.Second)
	if !strings.Contains(failed, "ValidatingWebhookConfiguration "+configName+" does not exist") {
		t.Fatalf("start without the configuration:\n%s", failed)
	}

	// Made beforehand, as the chart makes it.
	made := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": configName, "labels": map[string]any{"app.kubernetes.io/managed-by": "Helm"}},
		"webhooks": []any{},
	}}
	_, err = h.c.Dynamic.Resource(validating).Create(ctx, made, metav1.CreateOptions{})
	must(t, err)
	o := startOperator(t, h.hooks, operatorOpts{kubeconfig: kubeconfig, flags: args})
	o.waitLog(t, `"msg":"webhook configuration applied"`)
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: checked, namespace: %s, labels: {rbac-test: \"yes\"}}\n", h.ns)
	o.waitFor(t, "the hook's denial", func() bool {
		msg, err := kubectlApply(h.c.Kubeconfig, cm)
		return err != nil && strings.Contains(msg, "denied by the policy hook")
	})
	got, err := h.c.Dynamic.Resource(validating).Get(ctx, configName, metav1.GetOptions{})
	must(t, err)
	if got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the configuration's labels changed: %v", got.GetLabels())
	}
	if _, err := h.c.Dynamic.Resource(mutating).Get(ctx, configName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a MutatingWebhookConfiguration %s exists: %v", configName, err)
	}
	if strings.Contains(o.logs.String(), "forbidden") {
		t.Errorf("the existing mode's RBAC lacks something:\n%s", o.logs.String())
	}
}
