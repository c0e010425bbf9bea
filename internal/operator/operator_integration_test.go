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
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func cm(name string, data map[string]string) *corev1.ConfigMap {
	// Every namespace also holds the kube-root-ca.crt ConfigMap; bindings in
	// these tests select the test's own ConfigMaps by this label.
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "test"}}, Data: data}
}

// Synchronization comes first with the objects that exist; then events; a
// modification that leaves the jqFilter result unchanged runs nothing.
func TestIntegrationEventsAndJQFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
	_, err := cms.Create(ctx, cm("pre", map[string]string{"k": "v"}), metav1.CreateOptions{})
	must(t, err)
	e.bashHook("cm.sh", cmsConfig(`  labelSelector: {matchLabels: {owner: test}}
  jqFilter: .data
`), "")
	e.start()
	e.eventually(20*time.Second, "Synchronization", func() bool { return len(e.contexts("cm.sh")) >= 1 })
	sync := e.contexts("cm.sh")[0]
	if sync["type"] != "Synchronization" {
		t.Fatalf("first context %v, want Synchronization", sync)
	}
	objs, _ := sync["objects"].([]any)
	if len(objs) != 1 {
		t.Fatalf("Synchronization objects %v, want the one ConfigMap", objs)
	}
	first := objs[0].(map[string]any)
	if name(first["object"].(map[string]any)) != "pre" || fmt.Sprint(first["filterResult"]) != "map[k:v]" {
		t.Errorf("Synchronization object %v", first)
	}

	_, err = cms.Create(ctx, cm("a", map[string]string{"k": "1"}), metav1.CreateOptions{})
	must(t, err)
	e.eventually(10*time.Second, "Added a", func() bool { return len(e.contexts("cm.sh")) >= 2 })
	// A label change leaves .data alone: the hook must not run.
	_, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	must(t, err)
	time.Sleep(1500 * time.Millisecond)
	_, err = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"2"}}`), metav1.PatchOptions{})
	must(t, err)
	must(t, cms.Delete(ctx, "a", metav1.DeleteOptions{}))
	want := []string{"cms:Synchronization", "cms:Event/Added/a", "cms:Event/Modified/a", "cms:Event/Deleted/a"}
	e.eventually(10*time.Second, "Modified and Deleted", func() bool { return len(e.contexts("cm.sh")) >= len(want) })
	time.Sleep(500 * time.Millisecond)
	if got := describe(e.contexts("cm.sh")); !slices.Equal(got, want) {
		t.Errorf("contexts %v\nwant %v", got, want)
	}
	mod := e.contexts("cm.sh")[2]
	if fmt.Sprint(mod["filterResult"]) != "map[k:2]" {
		t.Errorf("Modified filterResult %v, want the new data", mod["filterResult"])
	}
}

// A binding to a kind whose CRD is installed after start waits, then starts.
// Another binding's CRD exists from the start.
func TestIntegrationCustomResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	early := e.c.InstallCRD(t, testcluster.CRD{Kind: "Early"})
	lateGroup := testcluster.Unique()
	lateCRD := testcluster.CRD{Kind: "Late"}.Object(lateGroup)
	e.bashHook("crs.sh", fmt.Sprintf(`
configVersion: v1
kubernetes:
- name: early
  apiVersion: %s/v1
  kind: Early
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
- name: late
  apiVersion: %s/v1
  kind: late
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
`, early.Group, lateGroup), "")
	e.start()
	e.eventually(20*time.Second, "early Synchronization", func() bool {
		return slices.Contains(describe(e.contexts("crs.sh")), "early:Synchronization")
	})
	e.wantLogged("waiting for it", "no log says the late binding waits for its kind")
	_, err := e.c.Dynamic.Resource(testcluster.CRDGVR).Create(ctx, lateCRD, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = e.c.Dynamic.Resource(testcluster.CRDGVR).Delete(context.Background(), lateCRD.GetName(), metav1.DeleteOptions{})
	})
	e.eventually(45*time.Second, "late Synchronization", func() bool {
		return slices.Contains(describe(e.contexts("crs.sh")), "late:Synchronization")
	})
	late := early
	late.Group, late.Resource = lateGroup, "lates"
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lateGroup + "/v1", "kind": "Late", "metadata": map[string]any{"name": "l1"}, "spec": map[string]any{"x": int64(1)},
	}}
	_, err = e.c.Dynamic.Resource(late).Namespace(e.ns).Create(ctx, obj, metav1.CreateOptions{})
	must(t, err)
	e.eventually(10*time.Second, "Added l1", func() bool {
		return slices.Contains(describe(e.contexts("crs.sh")), "late:Event/Added/l1")
	})
}

// Pods: a label selector picks which Pods run the hook; kwok's Running
// status arrives as a Modified event.
func TestIntegrationPodsWithLabelSelector(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.bashHook("pods.sh", `
configVersion: v1
kubernetes:
- name: web-pods
  kind: Pod
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector:
    matchExpressions: [{key: app, operator: In, values: [web]}]
  jqFilter: '{phase: .status.phase}'
`, "")
	e.start()
	e.eventually(20*time.Second, "Synchronization", func() bool { return len(e.contexts("pods.sh")) >= 1 })
	for _, p := range []struct{ name, app string }{{"web-1", "web"}, {"db-1", "db"}} {
		_, err := e.c.Client.CoreV1().Pods(e.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{"app": p.app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		must(t, err)
	}
	e.eventually(30*time.Second, "the Running phase of web-1", func() bool {
		for _, c := range e.contexts("pods.sh") {
			if fmt.Sprint(c["filterResult"]) == "map[phase:Running]" {
				return true
			}
		}
		return false
	})
	for _, d := range describe(e.contexts("pods.sh")) {
		if strings.Contains(d, "db-1") {
			t.Errorf("a Pod outside the label selector ran the hook: %s", d)
		}
	}
}

// Field selectors and name selectors (one name: server side; several:
// client side) pick objects; Synchronization lists only those.
func TestIntegrationFieldAndNameSelectors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
	for _, n := range []string{"a", "b", "c"} {
		_, err := cms.Create(ctx, cm(n, nil), metav1.CreateOptions{})
		must(t, err)
	}
	e.bashHook("sel.sh", `
configVersion: v1
kubernetes:
- name: by-field
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  fieldSelector:
    matchExpressions:
    - {field: metadata.name, operator: NotEquals, value: a}
    - {field: metadata.name, operator: "!=", value: kube-root-ca.crt}
  executeHookOnEvent: []
- name: by-name
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  nameSelector: {matchNames: [a, c]}
  executeHookOnEvent: []
- name: one-name
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  nameSelector: {matchNames: [b]}
  executeHookOnEvent: []
`, "")
	e.start()
	e.eventually(20*time.Second, "three Synchronizations", func() bool { return len(e.contexts("sel.sh")) >= 3 })
	got := map[string][]string{}
	for _, c := range e.contexts("sel.sh") {
		for _, o := range c["objects"].([]any) {
			got[c["binding"].(string)] = append(got[c["binding"].(string)], name(o.(map[string]any)["object"].(map[string]any)))
		}
	}
	want := map[string][]string{"by-field": {"b", "c"}, "by-name": {"a", "c"}, "one-name": {"b"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Synchronization objects %v, want %v", got, want)
	}
	// Snapshot-only bindings (executeHookOnEvent: []) run nothing on events.
	_, err := cms.Create(ctx, cm("d", nil), metav1.CreateOptions{})
	must(t, err)
	time.Sleep(1500 * time.Millisecond)
	if n := len(e.contexts("sel.sh")); n != 3 {
		t.Errorf("%d contexts after an event, want the 3 Synchronizations only", n)
	}
}

// Groups deliver Group contexts with every member's snapshot; a schedule
// with includeSnapshotsFrom gets snapshots too; onStartup hooks run first,
// by order then path.
func TestIntegrationGroupsSnapshotsStartupSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm("c1", map[string]string{"k": "v"}), metav1.CreateOptions{})
	must(t, err)
	e.bashHook("group.sh", `
configVersion: v1
onStartup: 5
schedule:
- name: tick
  crontab: "* * * * * *"
  includeSnapshotsFrom: [cms]
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector: {matchLabels: {owner: test}}
  group: g
  keepFullObjectsInMemory: false
  jqFilter: .metadata.name
- name: secrets
  kind: Secret
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  group: g
  jqFilter: .metadata.name
`, "")
	e.bashHook("b-first.sh", "configVersion: v1\nonStartup: 1\n", "")
	e.bashHook("a-second.sh", "configVersion: v1\nonStartup: 2\n", "")
	e.bashHook("c-second.sh", "configVersion: v1\nonStartup: 2\n", "")
	e.start()
	e.eventually(20*time.Second, "a Schedule context", func() bool {
		return slices.Contains(describe(e.contexts("group.sh")), "tick:Schedule")
	})
	ctxs := e.contexts("group.sh")
	if ctxs[0]["binding"] != "onStartup" {
		t.Errorf("first context of group.sh %v, want onStartup", ctxs[0])
	}
	var group map[string]any
	for _, c := range ctxs {
		if c["type"] == "Group" {
			group = c
			break
		}
	}
	if group == nil || group["groupName"] != "g" || group["objects"] != nil {
		t.Fatalf("no proper Group context in %v", describe(ctxs))
	}
	snaps := group["snapshots"].(map[string]any)
	cmsSnap := snaps["cms"].([]any)
	if len(cmsSnap) != 1 || fmt.Sprint(cmsSnap[0]) != "map[filterResult:c1]" {
		t.Errorf("cms snapshot %v: want one entry with only filterResult (keepFullObjectsInMemory: false)", cmsSnap)
	}
	if s, ok := snaps["secrets"].([]any); !ok || len(s) != 0 {
		t.Errorf("secrets snapshot %v, want []", snaps["secrets"])
	}
	for _, c := range ctxs {
		if c["type"] == "Schedule" {
			if _, ok := c["snapshots"].(map[string]any)["cms"]; !ok {
				t.Errorf("Schedule context without the cms snapshot: %v", c)
			}
			break
		}
	}
	// onStartup order: by order, then path; all before any binding.
	var order []string
	for _, n := range []string{"b-first.sh", "a-second.sh", "c-second.sh"} {
		info, err := os.Stat(e.recordFile(n))
		must(t, err)
		order = append(order, fmt.Sprintf("%d:%s", info.ModTime().UnixNano(), n))
	}
	slices.Sort(order)
	for i, want := range []string{"b-first.sh", "a-second.sh", "c-second.sh"} {
		if !strings.HasSuffix(order[i], want) {
			t.Errorf("onStartup order %v, want b-first, a-second, c-second", order)
			break
		}
	}
}

// A Go hook's operations are applied: it labels each ConfigMap it sees.
func TestIntegrationGoHookAppliesOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.goHook("labeler", `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",
  "namespace":{"nameSelector":{"matchNames":["NAMESPACE"]}},"executeHookOnSynchronization":false}]}`)
	e.start()
	time.Sleep(time.Second)
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm("x", nil), metav1.CreateOptions{})
	must(t, err)
	e.eventually(15*time.Second, "the label from the Go hook", func() bool {
		got, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(ctx, "x", metav1.GetOptions{})
		return err == nil && got.Labels["seen-by-go"] == "x"
	})
	e.wantLogged(`go hook done`, "the Go hook's JSON log line did not reach the operator log")
}

// A failing hook is retried (with backoff) until it succeeds and holds its
// queue meanwhile; allowFailure lets the queue move on.
func TestIntegrationRetryAndAllowFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	counter := filepath.Join(t.TempDir(), "count")
	e.bashHook("flaky.sh", "configVersion: v1\nonStartup: 1\n", fmt.Sprintf(`
n=$(cat %[1]q 2>/dev/null || echo 0); echo $((n+1)) > %[1]q
if (( n < 2 )); then echo "failing on purpose, attempt $((n+1))" >&2; exit 3; fi`, counter))
	e.bashHook("after.sh", "configVersion: v1\nonStartup: 2\n", "")
	e.bashHook("broken.sh", cmsConfig(`  allowFailure: true
`), "exit 1")
	e.bashHook("watcher.sh", cmsConfig(""), "")
	e.start()
	e.eventually(20*time.Second, "after.sh to run", func() bool { return len(e.runs("after.sh")) == 1 })
	if n := len(e.runs("flaky.sh")); n != 3 {
		t.Errorf("flaky.sh ran %d times, want 3 (two failures, then success)", n)
	}
	if !e.logs.contains("failing on purpose, attempt 2") || !e.logs.contains("exit") {
		t.Errorf("the failures' stderr is not in the log")
	}
	// broken.sh fails on every run but allows failure: it is not retried
	// (the retry delay here is 100ms), and the main queue goes on to run
	// watcher.sh's Synchronization (the two arrive in either order).
	e.eventually(20*time.Second, "both Synchronizations", func() bool {
		return len(e.runs("watcher.sh")) >= 1 && len(e.runs("broken.sh")) >= 1
	})
	time.Sleep(time.Second)
	if n := len(e.runs("broken.sh")); n != 1 {
		t.Errorf("broken.sh ran %d times; a failure with allowFailure is not retried", n)
	}
	e.wantLogged("allowFailure is set", "the allowed failure was not logged")
}

// A hook that outlives its timeout is killed and counts as failed.
func TestIntegrationHookTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.bashHook("slow.sh", `
configVersion: v1
onStartup: 1
settings: {timeout: 1s}
`, "sleep 60")
	start := time.Now()
	e.start()
	e.eventually(20*time.Second, "two runs of slow.sh", func() bool { return len(e.runs("slow.sh")) >= 2 })
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("two timed-out runs took %v; the 1s timeout did not end them", el)
	}
	e.wantLogged("timed out", "the log does not say the hook timed out")
}

// An operations file with an invalid operation applies none of them, and the
// error names the operation's index.
func TestIntegrationInvalidOperationsApplyNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.bashHook("bad-ops.sh", "configVersion: v1\nonStartup: 1\n", fmt.Sprintf(`
cat > "$KUBERNETES_PATCH_PATH" <<'OPS'
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "should-not-exist", "namespace": %q}}}
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": %q, "name": "x"}
OPS`, e.ns, e.ns))
	e.start()
	e.eventually(20*time.Second, "two failed runs", func() bool { return len(e.runs("bad-ops.sh")) >= 2 })
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Get(context.Background(), "should-not-exist", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the valid operation before the invalid one was applied (get: %v)", err)
	}
	e.wantLogged("operation 1", "the log does not name the invalid operation's index")
}

// Namespaces that start matching namespace.labelSelector while running are
// watched from then on; namespaces that stop matching are let go.
func TestIntegrationDynamicNamespaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	label := "hook-operator-test-" + strings.TrimPrefix(e.ns, "test-")
	e.bashHook("dyn.sh", fmt.Sprintf(`
configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {labelSelector: {matchLabels: {%s: "yes"}}}
  jqFilter: .metadata.name
`, label), "")
	e.start()
	e.eventually(20*time.Second, "Synchronization", func() bool { return len(e.contexts("dyn.sh")) >= 1 })
	ns, err := e.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-dyn-", Labels: map[string]string{label: "yes"}},
	}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		_ = e.c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Until the namespace controller makes the default ServiceAccount a
	// namespace is usable for ConfigMaps already.
	e.eventually(10*time.Second, "the namespace to be watched", func() bool { return e.logs.contains(ns.Name) })
	_, err = e.c.Client.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("in-dyn", nil), metav1.CreateOptions{})
	must(t, err)
	e.eventually(10*time.Second, "Added in-dyn", func() bool {
		for _, c := range e.contexts("dyn.sh") {
			if c["watchEvent"] == "Added" && c["filterResult"] == "in-dyn" {
				return true
			}
		}
		return false
	})
	// Unlabel: later objects there no longer run the hook.
	_, err = e.c.Client.CoreV1().Namespaces().Patch(ctx, ns.Name, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label)), metav1.PatchOptions{})
	must(t, err)
	e.eventually(10*time.Second, "the namespace to be let go", func() bool { return e.logs.contains("no longer matches") })
	// Other objects of the namespace (kube-root-ca.crt, made by the
	// controller manager) may still be running the hook: look for this one.
	_, err = e.c.Client.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm("after", nil), metav1.CreateOptions{})
	must(t, err)
	time.Sleep(1500 * time.Millisecond)
	for _, c := range e.contexts("dyn.sh") {
		if c["filterResult"] == "after" {
			t.Errorf("an object in a namespace that stopped matching ran the hook: %v", describe([]map[string]any{c}))
		}
	}
}

// resynchronizationPeriod delivers a fresh Synchronization every period.
func TestIntegrationResynchronizationPeriod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.bashHook("resync.sh", cmsConfig(`  resynchronizationPeriod: 1s
`), "")
	e.start()
	e.eventually(15*time.Second, "three Synchronizations", func() bool {
		n := 0
		for _, c := range e.contexts("resync.sh") {
			if c["type"] == "Synchronization" {
				n++
			}
		}
		return n >= 3
	})
}

// waitForSynchronization: false lets start-up go on while the binding's
// Synchronization (in its own queue) is still running.
func TestIntegrationNoWaitForSynchronizationAndUnservedBindings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := newGate(t)
	e.bashHook("slow-sync.sh", cmsConfig(`  queue: slow
  waitForSynchronization: false
`), gate.wait())
	e.bashHook("tick.sh", `
configVersion: v1
schedule:
- name: tick
  crontab: "* * * * * *"
kubernetesValidating:
- name: check.example.com
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [configmaps]
`, "")
	e.start()
	// The schedule starts although slow-sync.sh's Synchronization is still
	// running in its queue.
	e.eventually(20*time.Second, "a Schedule run while the Synchronization is held", func() bool {
		return len(e.runs("tick.sh")) >= 1
	})
	gate.open(t)
	e.eventually(10*time.Second, "the held Synchronization to finish", func() bool {
		return e.logs.contains(`"hook":"slow-sync.sh","level":"info","msg":"hook run succeeded"`)
	})
	// Admission bindings no webhook server serves are reported by the
	// webhook server (webhook.TestServerWarnsOfUnservedBindings).
}

// Start-up waits for the Synchronization run of a binding with
// waitForSynchronization before schedules start and before the operator is
// ready. (A group member whose kind is not served holds its group: see
// TestIntegrationGroupWaitsForUnservedMember.)
func TestIntegrationStartupWaitsForSynchronizationRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := newGate(t)
	e.bashHook("sync.sh", cmsConfig(`  group: g
`), gate.wait())
	e.bashHook("tick.sh", "configVersion: v1\nschedule:\n- name: tick\n  crontab: \"* * * * * *\"\n", "")
	e.start()
	e.eventually(20*time.Second, "the group's Synchronization", func() bool {
		return slices.Contains(describe(e.contexts("sync.sh")), "cms:Group")
	})
	time.Sleep(2 * time.Second) // the schedule fires every second once started
	if n := len(e.runs("tick.sh")); n != 0 {
		t.Errorf("the schedule ran %d times before the Synchronization run finished", n)
	}
	if ok, why := e.op.Ready(context.Background()); ok || !strings.Contains(strings.Join(why, "; "), "starting") {
		t.Errorf("ready while the Synchronization runs: %v %q", ok, why)
	}
	gate.open(t)
	e.eventually(20*time.Second, "a Schedule run after the Synchronization run", func() bool {
		return len(e.runs("tick.sh")) >= 1
	})
	e.waitReady(10 * time.Second)
}

// A retried run sees the present: an object deleted while its run waited
// for a retry drops out of the run, so a hook that patches the objects of
// its events (without ignoreMissingObject) recovers instead of failing
// until a restart.
func TestIntegrationRetrySeesThePresent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := newGate(t)
	e.bashHook("label.sh", cmsConfig(`  labelSelector: {matchLabels: {owner: test}}
  executeHookOnSynchronization: false
`), fmt.Sprintf(`[[ -e %q ]] || { echo "not yet" >&2; exit 1; }
jq -c '.[] | select(.type == "Event" and .watchEvent != "Deleted")
  | {operation: "MergePatch", kind: "ConfigMap", namespace: .object.metadata.namespace,
     name: .object.metadata.name, mergePatch: {metadata: {labels: {seen: "yes"}}}}' \
  "$BINDING_CONTEXT_PATH" > "$KUBERNETES_PATCH_PATH"`, gate))
	e.start()
	e.eventually(20*time.Second, "start-up", func() bool { return e.logs.contains("all bindings started") })
	ctx := context.Background()
	cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
	_, err := cms.Create(ctx, cm("doomed", nil), metav1.CreateOptions{})
	must(t, err)
	e.eventually(20*time.Second, "the run of doomed to fail", func() bool { return e.logs.contains("hook failed") })
	must(t, cms.Delete(ctx, "doomed", metav1.DeleteOptions{}))
	// The Deleted event joins the held run at its next retry, and the
	// Added of doomed drops out of it: its patch would fail with NotFound
	// at every retry.
	e.eventually(20*time.Second, "a retry with the Deleted event", func() bool {
		for _, run := range e.runs("label.sh") {
			got := describe(run)
			if slices.Contains(got, "cms:Event/Deleted/doomed") {
				if slices.Contains(got, "cms:Event/Added/doomed") {
					t.Fatalf("a retry after doomed was deleted still carries its Added event: %v", got)
				}
				return true
			}
		}
		return false
	})
	gate.open(t)
	_, err = cms.Create(ctx, cm("later", nil), metav1.CreateOptions{})
	must(t, err)
	e.eventually(20*time.Second, "later to be labelled", func() bool {
		got, err := cms.Get(ctx, "later", metav1.GetOptions{})
		return err == nil && got.Labels["seen"] == "yes"
	})
}

// A watch idle for longer than WatchIdleTimeout is restarted with a fresh
// list; the hook gets every event once, none lost and none repeated.
func TestIntegrationIdleWatchRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The API server sends a bookmark about every minute: with one second,
	// the watch goes idle between the objects made here.
	e.watchIdle = time.Second
	e.bashHook("idle.sh", cmsConfig(`  labelSelector: {matchLabels: {owner: test}}
  executeHookOnSynchronization: false
`), "")
	e.start()
	e.eventually(20*time.Second, "start-up", func() bool { return e.logs.contains("all bindings started") })
	ctx := context.Background()
	cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
	const n = 3
	for i := range n {
		_, err := cms.Create(ctx, cm(fmt.Sprintf("c%d", i), nil), metav1.CreateOptions{})
		must(t, err)
		e.eventually(20*time.Second, "an idle restart", func() bool {
			return strings.Count(e.logs.String(), "no event and no bookmark for 1s") > i
		})
	}
	e.eventually(20*time.Second, "every Added", func() bool { return len(e.contexts("idle.sh")) >= n })
	// One more restart: the list after the last one has been delivered
	// (the reflector backs off a little longer after each restart).
	restarts := strings.Count(e.logs.String(), "no event and no bookmark for 1s")
	e.eventually(40*time.Second, "one more idle restart", func() bool {
		return strings.Count(e.logs.String(), "no event and no bookmark for 1s") > restarts
	})
	got := describe(e.contexts("idle.sh"))
	want := []string{"cms:Event/Added/c0", "cms:Event/Added/c1", "cms:Event/Added/c2"}
	if !slices.Equal(got, want) {
		t.Errorf("contexts %v, want each Added once: %v", got, want)
	}
}
