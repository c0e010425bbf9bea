package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// A group hook with one binding whose kind is not served (here: a version
// its CRD does not serve yet) does not run at all: neither its group's
// Synchronization nor its schedule of the same group, which would show
// that binding's snapshot empty, and a hook that deletes what it no
// longer sees would delete everything. Start-up, the other hooks and the
// log go on; readiness, debug hooks and an Event on the operator's Pod
// name the binding that holds it. Once the version is served, the hook
// runs with that binding's real snapshot.
func TestIntegrationGroupWaitsForUnservedMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	gvr := e.c.InstallCRD(t, testcluster.CRD{Kind: "Late"})
	_, err := e.c.Dynamic.Resource(gvr).Namespace(e.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.Group + "/v1", "kind": "Late", "metadata": map[string]any{"name": "l1"},
	}}, metav1.CreateOptions{})
	must(t, err)
	_, err = e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm("c1", nil), metav1.CreateOptions{})
	must(t, err)
	e.bashHook("group.sh", cmsConfig(fmt.Sprintf(`  labelSelector: {matchLabels: {owner: test}}
  group: g
- name: lates
  apiVersion: %s/v2
  kind: Late
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  group: g
schedule:
- name: tick
  crontab: "* * * * * *"
  group: g
`, gvr.Group)), "")
	e.bashHook("other.sh", cmsConfig(""), "")
	e.events = true
	e.pod = operator.PodRef{Namespace: e.ns, Name: "operator-0"}
	e.start()

	e.eventually(30*time.Second, "start-up done, the other hook run, a schedule tick skipped", func() bool {
		return e.logs.contains("all bindings started; running") && len(e.runs("other.sh")) > 0 && e.logs.contains("schedule tick skipped")
	})
	msg := e.eventMessage("operator-0", operator.HeldReason)
	if n := len(e.runs("group.sh")); n != 0 {
		t.Fatalf("group.sh ran %d times while its binding lates was not served: %v", n, e.contexts("group.sh"))
	}
	if !strings.Contains(msg, "binding cms") || !strings.Contains(msg, "binding lates") || !strings.Contains(msg, "not served") {
		t.Errorf("the Event does not say which binding holds which: %q", msg)
	}
	ok, why := e.op.Ready(ctx)
	if ok || !strings.Contains(strings.Join(why, "\n"), "binding group.sh/cms has not synchronized: it waits for binding lates (its kind is not served") {
		t.Errorf("readiness does not name the binding that holds the group: %v %q", ok, why)
	}
	held := false
	for _, h := range e.op.Hooks() {
		for _, b := range h.Bindings {
			held = held || (h.Name == "group.sh" && b.Name == "cms" && strings.Join(b.HeldBy, ",") == "lates" && strings.Contains(b.Held, "not served"))
		}
	}
	if !held {
		t.Errorf("debug hooks does not say that cms waits for lates: %+v", e.op.Hooks())
	}

	// Serve v2 too: the binding lists, and the group runs with l1 in it.
	crd, err := e.c.Dynamic.Resource(testcluster.CRDGVR).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
	must(t, err)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v2 := map[string]any{"name": "v2", "served": true, "storage": false,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	must(t, unstructured.SetNestedSlice(crd.Object, append(versions, v2), "spec", "versions"))
	_, err = e.c.Dynamic.Resource(testcluster.CRDGVR).Update(ctx, crd, metav1.UpdateOptions{})
	must(t, err)
	e.eventually(60*time.Second, "the group's first run", func() bool { return len(e.runs("group.sh")) > 0 })
	first := e.runs("group.sh")[0]
	snaps, _ := first[0]["snapshots"].(map[string]any)
	lates, _ := snaps["lates"].([]any)
	cms, _ := snaps["cms"].([]any)
	if len(lates) != 1 || len(cms) != 1 {
		t.Errorf("the group's first run: snapshots %v; want l1 in lates and c1 in cms", snaps)
	}
	e.eventually(20*time.Second, "readiness", func() bool {
		ok, _ := e.op.Ready(ctx)
		return ok
	})
}
