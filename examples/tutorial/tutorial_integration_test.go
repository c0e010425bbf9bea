// Tests of the tutorial's hooks (docs/tutorial.md): what the tutorial says
// they do, they do, against the local cluster with the real binary, and
// their hook-operator test cases pass.
package tutorial_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

var greetingsGVR = schema.GroupVersionResource{Group: "tutorial.hook-operator.dev", Version: "v1", Resource: "greetings"}

// tutorialDir returns examples/tutorial of this checkout.
func tutorialDir(t *testing.T) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "examples", "tutorial")
}

// The cases of examples/tutorial/tests pass, as step 2 and 3 of the
// tutorial run them: `hook-operator test --hooks-dir hooks tests`.
func TestTutorialHookCases(t *testing.T) {
	dir := tutorialDir(t)
	out, err := exec.Command(testoperator.Binary(t), "test", "--hooks-dir", filepath.Join(dir, "hooks"), filepath.Join(dir, "tests")).CombinedOutput()
	if err != nil {
		t.Fatalf("hook-operator test: %v\n%s", err, out)
	}
	for _, c := range []string{"PASS configmaps", "PASS greetings", "2 passed, 0 failed"} {
		if !strings.Contains(string(out), c) {
			t.Errorf("hook-operator test printed no %q:\n%s", c, out)
		}
	}
}

// The tutorial's two hooks, run by the real binary from examples/tutorial/hooks
// as the tutorial runs them:
//   - configmaps.sh (step 2) logs its onStartup context, annotates a
//     labelled ConfigMap with its keys and follows a change of its data,
//     and leaves an unlabelled one alone;
//   - greetings.sh (step 3) answers a Greeting with the ConfigMap
//     <name>-greeting owned by it, holding "hello, <name>", and a Ready
//     status describing the Greeting's generation; a new word updates
//     both; deleting the Greeting deletes the ConfigMap.
//
// Every write is within the hooks' declared writes (no warning), no run
// fails, and once settled the hooks stay idle.
func TestIntegrationTutorialHooks(t *testing.T) {
	c := testcluster.Get(t)
	dir := tutorialDir(t)
	testoperator.InstallCRD(t, c, filepath.Join(dir, "crds", "greetings.tutorial.hook-operator.dev.yaml"))
	ns := c.Namespace(t)
	op := testoperator.Start(t, c, filepath.Join(dir, "hooks"))
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps(ns)

	// Step 2: the first hook.
	testoperator.Eventually(t, 30*time.Second, "the onStartup context in the log", func(context.Context) (bool, error) {
		return strings.Contains(op.Logs(), `"msg":"context: onStartup"`), nil
	})
	watched := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns,
		Labels: map[string]string{"tutorial.hook-operator.dev/watch": "true"}},
		Data: map[string]string{"colour": "blue", "size": "large"}}
	unwatched := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unwatched", Namespace: ns},
		Data: map[string]string{"colour": "red"}}
	for _, cm := range []*corev1.ConfigMap{watched, unwatched} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitKeys(t, c, ns, "colour,size")
	if _, err := cms.Patch(ctx, "demo", types.MergePatchType, []byte(`{"data":{"shape":"round"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitKeys(t, c, ns, "colour,shape,size")
	if !strings.Contains(op.Logs(), `"msg":"context: watched-configmaps Event Modified"`) {
		t.Errorf("the log has no line for the Modified context")
	}
	if cm, err := cms.Get(ctx, "unwatched", metav1.GetOptions{}); err != nil || len(cm.Annotations) != 0 {
		t.Errorf("the unlabelled ConfigMap: annotations %v (err %v), want none", cm.GetAnnotations(), err)
	}

	// Step 3: the Greeting operator.
	greetings := c.Dynamic.Resource(greetingsGVR).Namespace(ns)
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tutorial.hook-operator.dev/v1", "kind": "Greeting",
		"metadata": map[string]any{"name": "world", "namespace": ns},
		"spec":     map[string]any{"name": "world"},
	}}
	g, err := greetings.Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitGreeting(t, c, ns, g.GetUID(), "hello, world")
	if _, err := greetings.Patch(ctx, "world", types.MergePatchType, []byte(`{"spec":{"word":"bonjour"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGreeting(t, c, ns, g.GetUID(), "bonjour, world")
	if err := greetings.Delete(ctx, "world", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testoperator.Eventually(t, 60*time.Second, "world-greeting garbage-collected", func(ctx context.Context) (bool, error) {
		_, err := cms.Get(ctx, "world-greeting", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	op.WaitQuiet(t, 3*time.Second, time.Minute)
	runs := op.Runs("configmaps.sh") + op.Runs("greetings.sh")
	time.Sleep(3 * time.Second)
	if now := op.Runs("configmaps.sh") + op.Runs("greetings.sh"); now != runs {
		t.Errorf("the hooks ran %d more times with nothing changing (a hot loop)", now-runs)
	}
	for _, hook := range []string{"configmaps.sh", "greetings.sh"} {
		if n := op.Failures(hook); n != 0 {
			t.Errorf("%s failed %d times", hook, n)
		}
	}
	if strings.Contains(op.Logs(), "writes outside the hook's declared writes") {
		t.Errorf("a hook wrote outside its declared writes (the chart's RBAC from `hook-operator rbac` would refuse it)")
	}
}

// waitKeys waits until the ConfigMap demo in ns is annotated with keys.
func waitKeys(t *testing.T, c *testcluster.Cluster, ns, keys string) {
	t.Helper()
	testoperator.Eventually(t, 30*time.Second, "demo annotated with keys "+keys, func(ctx context.Context) (bool, error) {
		cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cm.Annotations["tutorial.hook-operator.dev/keys"] == keys, nil
	})
}

// waitGreeting waits until the Greeting world (uid) in ns has its
// ConfigMap holding message, owned by it, and a Ready status with that
// message for its current generation.
func waitGreeting(t *testing.T, c *testcluster.Cluster, ns string, uid types.UID, message string) {
	t.Helper()
	testoperator.Eventually(t, 30*time.Second, "world-greeting holding "+message, func(ctx context.Context) (bool, error) {
		cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "world-greeting", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		refs := cm.OwnerReferences
		owned := len(refs) == 1 && refs[0].UID == uid && refs[0].Controller != nil && *refs[0].Controller
		return owned && cm.Data["message"] == message, nil
	})
	testoperator.Eventually(t, 30*time.Second, "Greeting world Ready with "+message, func(ctx context.Context) (bool, error) {
		g, err := c.Dynamic.Resource(greetingsGVR).Namespace(ns).Get(ctx, "world", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		status, _, _ := unstructured.NestedMap(g.Object, "status")
		return status["phase"] == "Ready" && status["message"] == message && status["configMap"] == "world-greeting" &&
			status["observedGeneration"] == g.GetGeneration(), nil
	})
}
