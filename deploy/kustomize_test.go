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

// deploy/ renders into the operator's Namespace the checked Deployment with
// the ConfigMap of deploy/hooks at /hooks/custom, and the generated RBAC;
// no CRDs (the demonstrations' are in examples/deploy/).
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
	if got := names(only(objs, "CustomResourceDefinition")); len(got) != 0 {
		t.Errorf("deploy/ renders the CRDs %v; they belong to examples/deploy/", got)
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

// examples/deploy/ is deploy/ with the image's demonstrations: their CRDs
// (each file of deploy/crds), their generated RBAC beside the base's, and
// the operator started on /examples/hooks.
func TestKustomizeExamples(t *testing.T) {
	objs := kustomize(t, filepath.Join(repoRoot(t), "examples", "deploy"))
	if got, want := names(only(objs, "CustomResourceDefinition")), crdNames(t); !slices.Equal(got, want) {
		t.Errorf("CRDs %v, want those of deploy/crds %v: run make deploy", got, want)
	}
	var roles []string
	for _, o := range only(objs, "ClusterRole") {
		roles = append(roles, o.GetName())
	}
	if !slices.Contains(roles, "hook-operator") || !slices.Contains(roles, "hook-operator-examples") {
		t.Errorf("ClusterRoles %v, want hook-operator and hook-operator-examples", roles)
	}
	container, _ := operatorContainer(t, objs)
	args, _ := container["args"].([]any)
	if len(args) < 3 || args[2] != "/examples/hooks" {
		t.Errorf("args %v, want --hooks-dir /examples/hooks", args)
	}
}
