package watch

import (
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// A binding's stale threshold is its own staleAfter, else its hook's, else
// the operator's default; a shared watch restarts at the shortest of its
// bindings'. A binding's view is as old as its oldest watch's, counted from
// the watch's start until it first hears from the API server, and the
// metrics serve both figures for each binding that watches something.
func TestInformerFreshness(t *testing.T) {
	h := &hook.Hook{Name: "h.sh", Config: hook.Config{Settings: hook.Settings{StaleAfter: 10 * time.Minute}, Kubernetes: []hook.KubernetesBinding{
		{Common: hook.Common{Name: "own"}, StaleAfter: 2 * time.Second},
		{Common: hook.Common{Name: "hooks"}},
	}}}
	plain := &hook.Hook{Name: "plain.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{{Common: hook.Common{Name: "default"}}}}}
	own := newBinding(h, &h.Config.Kubernetes[0], newOutbox(nil), discardLog())
	hooks := newBinding(h, &h.Config.Kubernetes[1], newOutbox(nil), discardLog())
	def := newBinding(plain, &plain.Config.Kubernetes[0], newOutbox(nil), discardLog())

	for _, c := range []struct {
		bindings    []*Binding
		defaultIdle time.Duration
		want        time.Duration
	}{
		{[]*Binding{own, hooks}, 3 * time.Minute, 2 * time.Second},
		{[]*Binding{hooks, def}, 3 * time.Minute, 3 * time.Minute},
		{[]*Binding{hooks}, 3 * time.Minute, 10 * time.Minute},
		{[]*Binding{def}, 3 * time.Minute, 3 * time.Minute},
		{[]*Binding{def}, 0, 0},
	} {
		inf := &informer{bindings: c.bindings, defaultIdle: c.defaultIdle}
		if got := inf.staleAfter(); got != c.want {
			t.Errorf("watch of %d bindings, default %s: restarts after %s, want %s", len(c.bindings), c.defaultIdle, got, c.want)
		}
	}

	w := &Watcher{idle: 3 * time.Minute}
	all := []*Binding{own, hooks, def}
	w.bindings.Store(&all)
	older, newer, unstarted := &informer{}, &informer{}, &informer{}
	now := time.Now()
	older.touch(now.Add(-5 * time.Second))
	newer.touch(now.Add(-time.Second))
	own.sources = map[string]*source{"a": {inf: older}, "b": {inf: newer}}
	hooks.sources = map[string]*source{"a": {inf: unstarted}}
	age, after, ok := w.Freshness(own)
	if !ok || age < 5*time.Second || age > time.Minute || after != 2*time.Second {
		t.Errorf("own: age %s, threshold %s, ok %v; want the older watch's 5s or a little more, 2s, true", age, after, ok)
	}
	if _, after, ok := w.Freshness(hooks); ok || after != 10*time.Minute {
		t.Errorf("hooks, whose watch has not started: threshold %s, ok %v; want 10m, false", after, ok)
	}

	fams := freshnessCollector{w: w, age: "age", staleAfter: "after"}.Collect()
	if len(fams) != 2 || len(fams[0].Series) != 1 || len(fams[1].Series) != 1 {
		t.Fatalf("families %+v, want one series each: the one binding that watches", fams)
	}
	if s := fams[0].Series[0]; s.Values[0] != "h.sh" || s.Values[1] != "own" || s.Value < 5 {
		t.Errorf("age series %+v", s)
	}
	if s := fams[1].Series[0]; s.Value != 2 {
		t.Errorf("threshold series %+v, want 2", s)
	}
}
