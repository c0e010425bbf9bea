package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// reloadHook is a bash hook with the given kubernetes bindings (JSON) that
// appends one line per context to records/<name>: "S <binding> <names>"
// for a Synchronization, "E <binding> <watchEvent> <name> <version>" for an
// Event. broken makes its --config print something that is not JSON.
func reloadHook(ns, records, name, bindings, version string, broken bool) string {
	config := `{"configVersion":"v1","kubernetes":` + bindings + `}`
	if broken {
		config = `this is not JSON`
	}
	return bashHook(strings.ReplaceAll(config, "NS", ns), `set -euo pipefail
jq -r --arg v `+version+` '.[] | if .type == "Synchronization" then "S \(.binding) \([.objects[].object.metadata.name] | sort | join(","))"
  elif .type == "Event" then "E \(.binding) \(.watchEvent) \(.object.metadata.name) \($v)" else empty end' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, name)+`
`)
}

func cmBinding(name, app string) string {
	return `{"name":"` + name + `","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["NS"]}},"labelSelector":{"matchLabels":{"app":"` + app + `"}}}`
}

// The hooks folder, laid out and updated as a ConfigMap volume, is
// reloaded without a restart (all through the binary, on the local
// cluster):
//   - a hook added starts with its Synchronization; the running hook gets
//     no new one;
//   - a hook's binding changed restarts that binding alone (a new
//     Synchronization of the objects it selects now), its other binding
//     keeps running without one;
//   - a script changed without a configuration change is run as it is
//     now, and restarts nothing;
//   - a configuration broken changes nothing: the error is logged, counted
//     and left as an Event on the operator's Pod, and every hook keeps
//     running; fixed (with its binding changed), it applies;
//   - a hook removed stops.
func TestIntegrationHooksReload(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	ctx := context.Background()
	mkcm := func(name, app string) { h.configMap(t, name, map[string]string{"app": app}, nil) }
	for name, app := range map[string]string{"a1": "a", "o1": "other", "b1": "b", "a2-1": "a2", "bn1": "b-new"} {
		mkcm(name, app)
	}
	// The operator's Pod, for the Event about a failed reload. Nothing
	// runs it: the local cluster has no nodes.
	pod, err := h.c.Client.CoreV1().Pods(h.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hook-operator-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "hook-operator:test"}}},
	}, metav1.CreateOptions{})
	must(t, err)

	aV1 := `[` + cmBinding("cms", "a") + `,` + cmBinding("others", "other") + `]`
	aV2 := `[` + cmBinding("cms", "a2") + `,` + cmBinding("others", "other") + `]`
	bV1 := `[` + cmBinding("bs", "b") + `]`
	bV2 := `[` + cmBinding("bs", "b-new") + `]`
	// hookVersion is what one version of the folder holds of a hook: its
	// bindings, the version its runs record, and whether --config is broken.
	type hookVersion struct {
		bindings, script string
		broken           bool
	}
	version := 0
	// write puts a new version of the folder in place with hooks a and b
	// (b left out when nil).
	write := func(a hookVersion, b *hookVersion) {
		t.Helper()
		version++
		files := map[string]string{"a.sh": reloadHook(h.ns, records, "a", a.bindings, a.script, a.broken)}
		if b != nil {
			files["b.sh"] = reloadHook(h.ns, records, "b", b.bindings, b.script, b.broken)
		}
		testoperator.ConfigMapVolume(t, h.hooks, fmt.Sprint(version), files)
	}
	write(hookVersion{aV1, "script1", false}, nil)

	o := h.startEnv(t,
		[]string{"POD_NAME=" + pod.Name, "POD_NAMESPACE=" + h.ns, "POD_UID=" + string(pod.UID)})
	lines := func(hook string) []string {
		data, _ := os.ReadFile(filepath.Join(records, hook))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	count := func(hook, prefix string) int {
		n := 0
		for _, l := range lines(hook) {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	has := func(hook, line string) func() bool {
		return func() bool { return count(hook, line) > 0 }
	}
	reloads := func(result string) func() bool {
		return func() bool { return o.metric(t, `hook_operator_hooks_reload_total{result="`+result+`"}`) >= 1 }
	}
	o.waitFor(t, "a's Synchronizations", has("a", "S others o1"))
	o.waitFor(t, "a's Synchronizations", has("a", "S cms a1"))

	// A hook added.
	write(hookVersion{aV1, "script1", false}, &hookVersion{bV1, "script1", false})
	o.waitFor(t, "the added hook's Synchronization", has("b", "S bs b1"))
	o.waitFor(t, "hooks_reload_total{result=applied}", reloads("applied"))
	if n := count("a", "S "); n != 2 {
		t.Errorf("adding a hook gave the running hook new Synchronizations: %q", lines("a"))
	}

	// A binding changed: it alone starts anew.
	write(hookVersion{aV2, "script1", false}, &hookVersion{bV1, "script1", false})
	o.waitFor(t, "the changed binding's Synchronization", has("a", "S cms a2-1"))
	mkcm("a-late", "a")
	mkcm("a2-2", "a2")
	o.waitFor(t, "an event of the changed binding's new selector", has("a", "E cms Added a2-2 script1"))
	if n := count("a", "S others"); n != 1 {
		t.Errorf("the unchanged binding got %d Synchronizations, want its first alone: %q", n, lines("a"))
	}
	if n := count("b", "S "); n != 1 {
		t.Errorf("changing hook a gave hook b new Synchronizations: %q", lines("b"))
	}

	// A script changed, its configuration not.
	write(hookVersion{aV2, "script2", false}, &hookVersion{bV1, "script1", false})
	o.waitFor(t, "hooks_reload_total{result=unchanged}", reloads("unchanged"))
	mkcm("a2-3", "a2")
	o.waitFor(t, "the changed script's run", has("a", "E cms Added a2-3 script2"))
	if n := count("a", "S "); n != 3 {
		t.Errorf("a script change restarted bindings: %q", lines("a"))
	}

	// A configuration broken while its script changes: no configuration
	// changes, it is reported, and what runs is what the log says: b's
	// configuration as loaded before (its binding on app=b, not the
	// b-new of the broken version) with its new body (script2).
	write(hookVersion{aV2, "script2", false}, &hookVersion{bV2, "script2", true})
	o.waitFor(t, "hooks_reload_total{result=invalid}", reloads("invalid"))
	o.waitFor(t, "the Event on the operator's Pod", func() bool {
		evs, err := h.c.Client.CoreV1().Events(h.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "HooksReloadFailed" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.UID == pod.UID && strings.Contains(e.Message, "b.sh") {
				return true
			}
		}
		return false
	})
	if !strings.Contains(o.logs.String(), "no configuration was reloaded: "+operator.KeptAfterFailedReload) {
		t.Error("the log does not say what runs after the broken change")
	}
	mkcm("b2", "b")
	mkcm("a2-4", "a2")
	mkcm("bn-broken", "b-new")
	o.waitFor(t, "the running hooks, after a broken change", func() bool {
		return has("b", "E bs Added b2 script2")() && has("a", "E cms Added a2-4 script2")()
	})
	if has("b", "E bs Added b2 script1")() || has("b", "E bs Added bn-broken")() {
		t.Errorf("after the broken change, b ran its old body or its new configuration, not what the log says: %q", lines("b"))
	}

	// Fixed, with b's binding changed.
	write(hookVersion{aV2, "script2", false}, &hookVersion{bV2, "script3", false})
	o.waitFor(t, "the fixed hook's new Synchronization", has("b", "S bs bn-broken,bn1"))

	// A hook removed.
	write(hookVersion{aV2, "script2", false}, nil)
	o.waitLog(t, `"removed":["b.sh"]`)
	mkcm("bn2", "b-new")
	mkcm("a2-5", "a2")
	o.waitFor(t, "a's event after b's removal", has("a", "E cms Added a2-5 script2"))
	time.Sleep(500 * time.Millisecond)
	if has("b", "E bs Added bn2")() {
		t.Errorf("the removed hook still ran: %q", lines("b"))
	}
	if has("a", "E cms Added a-late")() {
		t.Errorf("the binding's old selector still delivered events: %q", lines("a"))
	}
	if o.metric(t, `hook_operator_hooks_reload_total{result="failed"}`) > 0 {
		t.Errorf("a reload failed:\n%s", o.logs.String())
	}
}
