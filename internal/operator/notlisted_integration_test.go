package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// A reload that restarts a binding whose snapshot a kept binding's
// contexts carry (here: its kind changes to one not served yet) must not
// let the kept binding's events run with that snapshot empty: the run
// waits, retried, counted in binding_monitor_missing_total, until the
// binding has listed again (here: a second reload gives it back its
// kind); then it runs with the snapshot.
func TestIntegrationReloadedSnapshotBindingHoldsRuns(t *testing.T) {
	e := newEnv(t)
	m := metrics.New("p_")
	e.metrics = m
	config := func(apiVersion, kind string) string {
		return fmt.Sprintf(`configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  includeSnapshotsFrom: [others]
  executeHookOnSynchronization: false
- name: others
  apiVersion: %s
  kind: %s
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  executeHookOnSynchronization: false
`, apiVersion, kind)
	}
	reload := func() {
		t.Helper()
		hooks, err := hook.Load(context.Background(), e.dir, hook.LoadOptions{})
		must(t, err)
		res, err := e.op.Reload(hooks)
		must(t, err)
		if !slices.Contains(res.Kept, "x.sh/cms") || !slices.Contains(res.Restarted, "x.sh/others") {
			t.Fatalf("reload kept %v, restarted %v; want cms kept, others restarted", res.Kept, res.Restarted)
		}
	}
	ctx := context.Background()
	create := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{})
		must(t, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1"}}
	_, err := e.c.Client.CoreV1().Secrets(e.ns).Create(ctx, secret, metav1.CreateOptions{})
	must(t, err)
	// ranFor returns the snapshot "others" of the run of cms's Added
	// event of objName, and whether there was one.
	ranFor := func(objName string) (string, bool) {
		for _, c := range e.contexts("x.sh") {
			obj, _ := c["object"].(map[string]any)
			if c["binding"] == "cms" && c["watchEvent"] == "Added" && obj != nil && name(obj) == objName {
				snaps, _ := c["snapshots"].(map[string]any)
				return fmt.Sprint(snaps["others"]), true
			}
		}
		return "", false
	}
	missing := func() string {
		var b strings.Builder
		must(t, metrics.WriteText(&b, m.Gather()))
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, `p_binding_monitor_missing_total{binding="others",hook="x.sh"} `) {
				return strings.TrimPrefix(line, `p_binding_monitor_missing_total{binding="others",hook="x.sh"} `)
			}
		}
		return ""
	}

	e.bashHook("x.sh", config("v1", "Secret"), "")
	e.start()
	e.eventually(30*time.Second, "the operator to be ready", func() bool { ok, _ := e.op.Ready(ctx); return ok })
	if got := missing(); got != "0" {
		t.Fatalf("binding_monitor_missing_total after start-up = %q, want 0", got)
	}
	create("before")
	e.eventually(30*time.Second, "the run of before", func() bool { _, ok := ranFor("before"); return ok })
	if snap, _ := ranFor("before"); !strings.Contains(snap, "s1") {
		t.Fatalf("before's run saw others = %s, want s1", snap)
	}

	e.bashHook("x.sh", config("later.example.com/v1", "Thing"), "")
	reload()
	create("during")
	e.eventually(30*time.Second, "binding_monitor_missing_total to count the held run", func() bool {
		return missing() != "0" && missing() != ""
	})
	if snap, ran := ranFor("during"); ran {
		t.Fatalf("during's run ran with others = %s while others had not listed", snap)
	}

	e.bashHook("x.sh", config("v1", "Secret"), "")
	reload()
	e.eventually(30*time.Second, "the run of during once others listed again", func() bool { _, ok := ranFor("during"); return ok })
	if snap, _ := ranFor("during"); !strings.Contains(snap, "s1") {
		t.Errorf("during's run saw others = %s, want s1", snap)
	}
}
