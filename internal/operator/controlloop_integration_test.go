package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// appCRD is a namespaced App with spec.configs (names of ConfigMaps to keep)
// and a status subresource.
var appCRD = testcluster.CRD{Kind: "App", Status: true}

func newApp(gvr schema.GroupVersionResource, name string, configs ...string) *unstructured.Unstructured {
	cs := make([]any, len(configs))
	for i, c := range configs {
		cs[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.Group + "/v1", "kind": "App",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"configs": cs},
	}}
}

func setConfigs(t *testing.T, apps dynamic.ResourceInterface, name string, configs ...string) {
	t.Helper()
	data := fmt.Sprintf(`{"spec":{"configs":["%s"]}}`, strings.Join(configs, `","`))
	if len(configs) == 0 {
		data = `{"spec":{"configs":[]}}`
	}
	_, err := apps.Patch(context.Background(), name, types.MergePatchType, []byte(data), metav1.PatchOptions{})
	must(t, err)
}

// appHook is a bash hook keeping, for each App, one ConfigMap per name in
// spec.configs as the App's "configs" set (ApplySet), and writing status.
const appHookBody = `
jq -c '.[] | (.objects // [] | .[].object), (select(.type=="Event" and .watchEvent!="Deleted" and .watchEvent!="Finalize") | .object)' "$BINDING_CONTEXT_PATH" |
while read -r app; do
  jq -c '{
    operation: "ApplySet", name: "configs",
    parent: {apiVersion: .apiVersion, kind: .kind, namespace: .metadata.namespace, name: .metadata.name},
    objects: [.spec.configs[] as $c | {apiVersion: "v1", kind: "ConfigMap",
      metadata: {name: ($c), namespace: $app.metadata.namespace}, data: {owner: $app.metadata.name}}]
  }' --argjson app "$app" <<<"$app" >> "$KUBERNETES_PATCH_PATH"
  jq -c '{operation: "Status", apiVersion: .apiVersion, kind: .kind, namespace: .metadata.namespace, name: .metadata.name,
    observedGeneration: true, status: {phase: "Ready", configs: (.spec.configs | length)}}' <<<"$app" >> "$KUBERNETES_PATCH_PATH"
done
`

func appHookConfig(group string, extra string) string {
	return fmt.Sprintf(`
configVersion: v1
kubernetes:
- name: apps
  apiVersion: %s/v1
  kind: App
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
%s`, group, extra)
}

// testFinalizer is the finalizer of the tests' finalizer bindings.
const testFinalizer = "test.hook-operator.dev/cleanup"

// newAppEnv is a test's env with appCRD installed: the App resource and
// the test namespace's Apps.
func newAppEnv(t *testing.T) (*env, schema.GroupVersionResource, dynamic.ResourceInterface) {
	e := newEnv(t)
	gvr := e.c.InstallCRD(t, appCRD)
	return e, gvr, e.c.Dynamic.Resource(gvr).Namespace(e.ns)
}

// newFinalizerEnv is newAppEnv for a hook whose binding holds
// testFinalizer (finalizerConfig): the Apps' finalizers are released when
// the test ends.
func newFinalizerEnv(t *testing.T) (*env, schema.GroupVersionResource, dynamic.ResourceInterface) {
	e, gvr, apps := newAppEnv(t)
	releaseAtEnd(t, e, gvr)
	return e, gvr, apps
}

// finalizerConfig is the hook configuration of a binding to Apps that
// holds testFinalizer.
func finalizerConfig(group string) string {
	return appHookConfig(group, "  finalizer: "+testFinalizer+"\n")
}

// waitFinalizer waits until the App name holds testFinalizer.
func waitFinalizer(e *env, apps dynamic.ResourceInterface, name string) {
	e.t.Helper()
	e.eventually(15*time.Second, "the finalizer", func() bool {
		got, err := apps.Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && slices.Contains(got.GetFinalizers(), testFinalizer)
	})
}

// deleteHeld creates the App name, waits until the hook's finalizer holds
// it, and deletes it.
func deleteHeld(e *env, gvr schema.GroupVersionResource, apps dynamic.ResourceInterface, name string) {
	e.t.Helper()
	ctx := context.Background()
	_, err := apps.Create(ctx, newApp(gvr, name), metav1.CreateOptions{})
	must(e.t, err)
	waitFinalizer(e, apps, name)
	must(e.t, apps.Delete(ctx, name, metav1.DeleteOptions{}))
}

// waitDeleted waits until the App name is gone; what says after what.
func waitDeleted(e *env, apps dynamic.ResourceInterface, name, what string) {
	e.t.Helper()
	e.eventually(30*time.Second, what, func() bool {
		_, err := apps.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// count is what a hook's counter file holds, "" before it writes one.
func count(file string) string {
	data, _ := os.ReadFile(file)
	return strings.TrimSpace(string(data))
}

// releaseAtEnd removes every finalizer from the test's objects of gvr when
// the test ends, after its operator has stopped (cleanups run last-in,
// first-out, so call it before e.start): objects left holding the test's
// finalizer would keep their namespace and CRD from ever being deleted.
func releaseAtEnd(t *testing.T, e *env, gvr schema.GroupVersionResource) {
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list %s to release finalizers: %v", gvr.Resource, err)
			return
		}
		for _, obj := range list.Items {
			_, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).Patch(ctx, obj.GetName(), types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("release finalizers of %s: %v", obj.GetName(), err)
			}
		}
	})
}

func cmNames(t *testing.T, e *env) []string {
	t.Helper()
	list, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	var out []string
	for _, c := range list.Items {
		if c.Name != "kube-root-ca.crt" {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Children are created, changed and pruned from the hook's declared set,
// objects outside the set are left alone, and the garbage collector removes
// the children with their parent. Status is written once per real change,
// and writing it does not run the hook again.
func TestIntegrationChildrenStatusAndGarbageCollection(t *testing.T) {
	t.Parallel()
	e, gvr, apps := newAppEnv(t)
	ctx := context.Background()
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}}, metav1.CreateOptions{})
	must(t, err)
	e.bashHook("app.sh", appHookConfig(gvr.Group, ""), appHookBody)
	e.start()
	e.eventually(20*time.Second, "Synchronization", func() bool { return len(e.runs("app.sh")) >= 1 })

	_, err = apps.Create(ctx, newApp(gvr, "app1", "a", "b"), metav1.CreateOptions{})
	must(t, err)
	e.eventually(15*time.Second, "children a and b", func() bool { return slices.Equal(cmNames(t, e), []string{"a", "b", "bystander"}) })
	e.eventually(10*time.Second, "status", func() bool {
		got, err := apps.Get(ctx, "app1", metav1.GetOptions{})
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		og, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return err == nil && phase == "Ready" && og == got.GetGeneration()
	})
	child, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(ctx, "a", metav1.GetOptions{})
	must(t, err)
	if refs := child.OwnerReferences; len(refs) != 1 || refs[0].Name != "app1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("child a ownerReferences %+v, want a controller reference to app1", refs)
	}
	// One run for the Synchronization, one for Added; the status write must
	// not cause a third.
	time.Sleep(2 * time.Second)
	if n := len(e.runs("app.sh")); n != 2 {
		t.Errorf("%d runs after creating one App, want 2 (Synchronization, Added): %v", n, describe(e.contexts("app.sh")))
	}

	setConfigs(t, apps, "app1", "b", "c")
	e.eventually(15*time.Second, "a pruned, c created", func() bool { return slices.Equal(cmNames(t, e), []string{"b", "bystander", "c"}) })
	time.Sleep(2 * time.Second)
	if n := len(e.runs("app.sh")); n != 3 {
		t.Errorf("%d runs after one spec change, want 3", n)
	}

	must(t, apps.Delete(ctx, "app1", metav1.DeleteOptions{}))
	e.eventually(60*time.Second, "children garbage-collected with their parent", func() bool {
		return slices.Equal(cmNames(t, e), []string{"bystander"})
	})
}

// A binding with a finalizer holds an object's deletion until the hook's
// Finalize run succeeds; failures are retried.
func TestIntegrationFinalizerHoldsDeletion(t *testing.T) {
	t.Parallel()
	e, gvr, apps := newFinalizerEnv(t)
	counter := filepath.Join(t.TempDir(), "finalize-count")
	e.bashHook("fin.sh", finalizerConfig(gvr.Group), fmt.Sprintf(`
if jq -e 'any(.[]; .watchEvent == "Finalize")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
  if (( n < 2 )); then echo "cleanup not done yet" >&2; exit 1; fi
fi`, counter))
	e.start()
	deleteHeld(e, gvr, apps, "held")
	e.eventually(15*time.Second, "the first failed Finalize run", func() bool {
		return count(counter) == "1"
	})
	if _, err := apps.Get(context.Background(), "held", metav1.GetOptions{}); err != nil {
		t.Fatalf("the object is gone although its Finalize run failed: %v", err)
	}
	waitDeleted(e, apps, "held", "deletion after the third Finalize run succeeded")
	if n := count(counter); n != "3" {
		t.Errorf("Finalize ran %s times, want 3 (two failures, one success)", n)
	}
}

// A Finalize run that requeues its object keeps the finalizer; the object
// comes back as Finalize when the requeue falls due, and the first Finalize
// run that does not requeue releases it.
func TestIntegrationFinalizeRequeueKeepsFinalizer(t *testing.T) {
	t.Parallel()
	e, gvr, apps := newFinalizerEnv(t)
	counter := filepath.Join(t.TempDir(), "finalize-count")
	e.bashHook("fin.sh", finalizerConfig(gvr.Group), fmt.Sprintf(`
jq -c '.[] | select(.watchEvent == "Finalize") | .object.metadata' "$BINDING_CONTEXT_PATH" | while read -r md; do
  n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
  if (( n < 2 )); then
    jq -c '{operation: "Requeue", after: "500ms", namespace, name}' <<<"$md" >> "$KUBERNETES_PATCH_PATH"
  fi
done`, counter))
	e.start()
	deleteHeld(e, gvr, apps, "waiting")
	waitDeleted(e, apps, "waiting", "deletion after the third Finalize run")
	if n := count(counter); n != "3" {
		t.Errorf("Finalize ran %s times, want 3 (two that requeued, then the one that released)", n)
	}
	var finalizes int
	for _, c := range e.contexts("fin.sh") {
		if c["watchEvent"] == "Finalize" {
			finalizes++
		}
		if c["watchEvent"] == "Requeue" {
			t.Errorf("a requeued object being finalized arrived as Requeue, want Finalize")
		}
	}
	if finalizes != 3 {
		t.Errorf("%d Finalize contexts, want 3", finalizes)
	}
}

// A Requeue operation runs the hook again for the object after the asked
// time, once.
func TestIntegrationRequeue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.bashHook("poll.sh", cmsConfig(`  labelSelector: {matchLabels: {owner: test}}
  executeHookOnSynchronization: false
`), `
jq -c '.[] | select(.watchEvent == "Added") | {operation: "Requeue", after: "2s", namespace: .object.metadata.namespace, name: .object.metadata.name}' \
  "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"
`)
	e.start()
	time.Sleep(time.Second)
	created := time.Now()
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm("slow", nil), metav1.CreateOptions{})
	must(t, err)
	var requeued time.Time
	e.eventually(15*time.Second, "the Requeue run", func() bool {
		for _, c := range e.contexts("poll.sh") {
			if c["watchEvent"] == "Requeue" {
				requeued = time.Now()
				return true
			}
		}
		return false
	})
	if d := requeued.Sub(created); d < 1800*time.Millisecond || d > 6*time.Second {
		t.Errorf("requeued after %v, want about 2s", d)
	}
	time.Sleep(3 * time.Second)
	if got := describe(e.contexts("poll.sh")); !slices.Equal(got, []string{"cms:Event/Added/slow", "cms:Event/Requeue/slow"}) {
		t.Errorf("contexts %v, want Added then one Requeue", got)
	}
}

// An operator restart loses nothing: the pruning inventory lives in the
// cluster, and an object deleted while the operator was down is finalized
// when it comes back.
func TestIntegrationRestartKeepsInventoryAndFinalizers(t *testing.T) {
	t.Parallel()
	e, gvr, apps := newFinalizerEnv(t)
	ctx := context.Background()
	e.bashHook("app.sh", finalizerConfig(gvr.Group), appHookBody)
	e.start()
	_, err := apps.Create(ctx, newApp(gvr, "app1", "a", "b"), metav1.CreateOptions{})
	must(t, err)
	_, err = apps.Create(ctx, newApp(gvr, "app2", "x"), metav1.CreateOptions{})
	must(t, err)
	e.eventually(20*time.Second, "children and finalizers", func() bool {
		a2, err := apps.Get(ctx, "app2", metav1.GetOptions{})
		return err == nil && slices.Contains(a2.GetFinalizers(), testFinalizer) &&
			slices.Equal(cmNames(t, e), []string{"a", "b", "x"})
	})
	e.stop()

	setConfigs(t, apps, "app1", "a")
	must(t, apps.Delete(ctx, "app2", metav1.DeleteOptions{}))
	time.Sleep(time.Second)
	if _, err := apps.Get(ctx, "app2", metav1.GetOptions{}); err != nil {
		t.Fatalf("app2 was deleted while no operator could finalize it: %v", err)
	}

	e.start()
	e.eventually(30*time.Second, "b pruned and app2 finalized after the restart", func() bool {
		_, err := apps.Get(ctx, "app2", metav1.GetOptions{})
		names := cmNames(t, e)
		return apierrors.IsNotFound(err) && slices.Contains(names, "a") && !slices.Contains(names, "b")
	})
	e.eventually(60*time.Second, "app2's child garbage-collected", func() bool {
		return !slices.Contains(cmNames(t, e), "x")
	})
}
