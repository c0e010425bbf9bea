package operator

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/queue"
)

func testHook(name string, kube ...hook.KubernetesBinding) *hook.Hook {
	return &hook.Hook{Name: name, Path: "/hooks/" + name, Config: hook.Config{Kubernetes: kube}}
}

func kb(name, kind string) hook.KubernetesBinding {
	return hook.KubernetesBinding{Common: hook.Common{Name: name, Queue: "main"}, Kind: kind}
}

func always(*hook.Hook) bool { return true }

func TestPlanReload(t *testing.T) {
	same := testHook("same.sh", kb("pods", "Pod"))
	changed := testHook("changed.sh", kb("keep", "Pod"), kb("edit", "ConfigMap"), kb("drop", "Secret"))
	gone := testHook("gone.sh", kb("cms", "ConfigMap"))
	prev := []*hook.Hook{changed, gone, same}

	edit := kb("edit", "ConfigMap")
	edit.LabelSelector = nil
	edit.NameSelector = []string{"x"}
	next := []*hook.Hook{
		testHook("added.sh", kb("new", "Pod")),
		testHook("changed.sh", kb("keep", "Pod"), edit, kb("fresh", "Service")),
		testHook("same.sh", kb("pods", "Pod")), // a new load: equal, another pointer
	}
	p := planReload(prev, next, always)
	r := p.result
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("added", r.Added, []string{"added.sh"})
	check("removed", r.Removed, []string{"gone.sh"})
	check("changed", r.Changed, []string{"changed.sh"})
	check("kept", r.Kept, []string{"changed.sh/keep"})
	check("restarted", r.Restarted, []string{"added.sh/new", "changed.sh/edit", "changed.sh/fresh"})
	if r.Webhooks {
		t.Error("no webhook binding changed, yet Webhooks is set")
	}
	var names []string
	for _, h := range p.hooks {
		names = append(names, h.Name)
	}
	check("hooks", names, []string{"added.sh", "changed.sh", "same.sh"})
	if p.hooks[2] != same {
		t.Error("an unchanged hook must keep running as it is (the same *hook.Hook)")
	}
	if p.hooks[1] != next[1] {
		t.Error("a changed hook must be the reloaded one")
	}

	// The same set again changes nothing.
	if r := planReload(prev, []*hook.Hook{changed, gone, same}, always).result; !r.Unchanged() {
		t.Errorf("an equal set: %+v, want no change", r)
	}
}

// A hook whose settings.sharded changed starts all its bindings anew (they
// hold other objects); so does a hook that is not running yet (nothing of
// it runs to be kept).
func TestPlanReloadRestartsWhole(t *testing.T) {
	prev := testHook("h.sh", kb("a", "Pod"), kb("b", "Pod"))
	next := testHook("h.sh", kb("a", "Pod"), kb("b", "Pod"))
	next.Config.Settings.Sharded = true
	r := planReload([]*hook.Hook{prev}, []*hook.Hook{next}, always).result
	if len(r.Kept) != 0 || len(r.Restarted) != 2 {
		t.Errorf("sharded changed: kept %q, restarted %q; want every binding restarted", r.Kept, r.Restarted)
	}

	next = testHook("h.sh", kb("a", "Pod"), kb("b", "ConfigMap"))
	r = planReload([]*hook.Hook{prev}, []*hook.Hook{next}, func(*hook.Hook) bool { return false }).result
	if len(r.Kept) != 0 || len(r.Restarted) != 2 {
		t.Errorf("not running: kept %q, restarted %q; want every binding restarted", r.Kept, r.Restarted)
	}
}

func TestPlanReloadWebhooks(t *testing.T) {
	prev := testHook("h.sh")
	next := testHook("h.sh")
	next.Config.Validating = []hook.WebhookBinding{{Common: hook.Common{Name: "v"}, Raw: map[string]any{"rules": []any{}}}}
	if r := planReload([]*hook.Hook{prev}, []*hook.Hook{next}, always).result; !r.Webhooks {
		t.Error("an admission binding was added, yet Webhooks is not set")
	}
}

// A run queued before a reload runs the reloaded hook, with the contexts of
// the bindings it still has; nothing is left of a removed hook's.
func TestRetarget(t *testing.T) {
	old := testHook("h.sh", kb("a", "Pod"), kb("b", "Pod"))
	old.Config.Schedule = []hook.ScheduleBinding{{Common: hook.Common{Name: "tick"}, Crontab: "* * * * *"}}
	cur := testHook("h.sh", kb("a", "Pod"))
	o := &Operator{log: discard()}
	o.setHooks([]*hook.Hook{cur})

	task := &queue.Task{Hook: old, Contexts: []binding.Context{
		{Binding: "a", Type: binding.TypeEvent},
		{Binding: "b", Type: binding.TypeEvent},
		{Binding: "tick", Type: binding.TypeSchedule},
	}}
	got := o.retarget(task)
	if got == nil || got.Hook != cur || len(got.Contexts) != 1 || got.Contexts[0].Binding != "a" {
		t.Fatalf("retarget = %+v; want the reloaded hook with binding a's context alone", got)
	}
	if task.Hook != old || len(task.Contexts) != 3 {
		t.Error("retarget changed the queued task; the queue still owns it")
	}
	if got := o.retarget(&queue.Task{Hook: old, Contexts: []binding.Context{{Binding: "tick", Type: binding.TypeSchedule}}}); got != nil {
		t.Errorf("a run of removed bindings only: %+v, want nil", got)
	}
	if got := o.retarget(&queue.Task{Hook: testHook("gone.sh"), Contexts: []binding.Context{{Binding: binding.OnStartup}}}); got != nil {
		t.Errorf("a run of a removed hook: %+v, want nil", got)
	}
	same := &queue.Task{Hook: cur, Contexts: []binding.Context{{Binding: "a"}}}
	if got := o.retarget(same); got != same {
		t.Error("a run of an unchanged hook must run as it is")
	}
}

func discard() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// A reload's changed bindings whose kind is missing from a served
// group/version are errors with a did-you-mean; unchanged bindings, new
// ones (their watch waits for the kind and names it), and kinds whose
// group/version is not served (CRD not installed yet), are not.
func TestMissingKinds(t *testing.T) {
	r := kube.NewStaticResolver(append(kube.BuiltinResources(), &metav1.APIResourceList{GroupVersion: "hello.example.com/v1",
		APIResources: []metav1.APIResource{{Name: "greetings", SingularName: "greeting", Kind: "Greeting", Namespaced: true}}}))
	crd := func(name, apiVersion, kind string) hook.KubernetesBinding {
		b := kb(name, kind)
		b.APIVersion = apiVersion
		return b
	}
	running := crd("greet", "hello.example.com/v1", "Greeting")
	typoKept := crd("old", "hello.example.com/v1", "Greting") // loaded before; not asked again
	prev := []*hook.Hook{testHook("greet.sh", running, typoKept)}
	next := []*hook.Hook{
		testHook("greet.sh", crd("greet", "hello.example.com/v1", "Greting"), typoKept),
		testHook("new.sh", crd("later", "later.example.com/v1", "Later"), crd("fine", "hello.example.com/v1", "greetings"),
			crd("second", "hello.example.com/v1", "Farewell")),
	}
	errs := missingKinds(prev, next, r)
	if len(errs) != 1 || errs[0].Hook != "greet.sh" || errs[0].Field != "kubernetes[0].kind" || !strings.Contains(errs[0].Reason, `did you mean "Greeting"?`) {
		t.Fatalf("missingKinds = %v; want one error for greet.sh's kubernetes[0].kind with did you mean \"Greeting\"?", errs)
	}
}

// The Event about a reload that failed leaves out the stderr of a hook's
// --config.
func TestReloadMessageLeavesOutConfigStderr(t *testing.T) {
	errs := hook.ConfigErrors{
		{Hook: "a.sh", Reason: "--config failed (exit status 1); make --config print the configuration and exit 0; its stderr ends with: token=" + leaked},
		{Hook: "b.sh", Field: "kubernetes[0].kind", Reason: "missing"},
	}
	got := withoutHookOutput(fmt.Errorf("load: %w", errs))
	if strings.Contains(got, leaked) {
		t.Errorf("message carries --config's stderr: %q", got)
	}
	for _, want := range []string{"a.sh", "exit 0; its stderr is in the operator's log", "b.sh: kubernetes[0].kind: missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q does not say %q", got, want)
		}
	}
}
