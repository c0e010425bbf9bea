package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kustomize renders dir with kubectl's built-in kustomize.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoRoot(t), "deploy", "rbac.yaml")); err != nil {
		t.Fatalf("deploy/rbac.yaml is missing: run make deploy (hack/gen-deploy.sh), which generates it with `hook-operator rbac`")
	}
	return objects(t, run(t, dir, nil, "kubectl", "kustomize", dir))
}

// deploy/ renders into the operator's Namespace, the shipped hooks' CRDs,
// the checked Deployment with the ConfigMap of deploy/hooks at
// /hooks/custom, and the generated RBAC.
func TestKustomize(t *testing.T) {
	objs := kustomize(t, filepath.Join(repoRoot(t), "deploy"))

	ns := one(t, objs, "Namespace")
	if ns.GetName() != "hook-operator" || ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("Namespace %s with labels %v, want hook-operator enforcing the restricted Pod Security Standard", ns.GetName(), ns.GetLabels())
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
		case "Role", "RoleBinding":
			// In the namespaces the hooks watch.
		default:
			if o.GetNamespace() != "hook-operator" {
				t.Errorf("%s %s is in namespace %q, want hook-operator", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
	}
	if got, want := names(only(objs, "CustomResourceDefinition")), crdNames(t); !slices.Equal(got, want) {
		t.Errorf("CRDs %v, want those of deploy/crds %v: list each file under resources", got, want)
	}

	// The hooks ConfigMap: generated from deploy/hooks, every file of it.
	var hooks *unstructured.Unstructured
	for _, o := range only(objs, "ConfigMap") {
		if strings.HasPrefix(o.GetName(), "hook-operator-hooks-") {
			hooks = o
		}
	}
	if hooks == nil {
		t.Fatal("no ConfigMap hook-operator-hooks-<hash>")
	}
	var cm corev1.ConfigMap
	typed(t, hooks, &cm)
	for name, data := range exampleHooks(t) {
		if cm.Data[name] != string(data) {
			t.Errorf("deploy/hooks/%s is not in the ConfigMap: add it to configMapGenerator in deploy/kustomization.yaml", name)
		}
	}
	checkDeployment(t, objs, deployment{
		namespace:      "hook-operator",
		hooksConfigMap: hooks.GetName(),
		hooksMount:     "/hooks/custom",
		rendered:       true,
	})
}

// The generated files (deploy/rbac.yaml, the chart's rules and CRDs) are
// what hack/gen-deploy.sh makes of the current hooks and CRDs.
func TestGeneratedFilesFresh(t *testing.T) {
	root := repoRoot(t)
	run(t, root, nil, filepath.Join(root, "hack", "gen-deploy.sh"), "--check")
}
