package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

func metricsText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	var b strings.Builder
	if err := metrics.WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A hook's kubernetes bindings started together record their start's
// time once the last of them has listed, per hook.
func TestEnableTimerRecordsWhenEveryBindingListed(t *testing.T) {
	m := metrics.New("p_")
	w := &Watcher{metrics: m}
	a := &hook.Hook{Name: "a.sh"}
	b := &hook.Hook{Name: "b.sh"}
	bindings := []*Binding{{Hook: a}, {Hook: a}, {Hook: b}}
	timers := w.enableTimers(bindings, time.Now().Add(-2*time.Second))
	if len(timers) != 2 {
		t.Fatalf("%d timers, want one per hook", len(timers))
	}
	timers["a.sh"].listed()
	timers["b.sh"].listed()
	text := metricsText(t, m)
	if strings.Contains(text, `hook="a.sh"`) {
		t.Errorf("a.sh recorded while one of its bindings had not listed:\n%s", text)
	}
	if !strings.Contains(text, `p_hook_enable_kubernetes_bindings_seconds{hook="b.sh"} 2`) {
		t.Errorf("b.sh not recorded at about 2s:\n%s", text)
	}
	timers["a.sh"].listed()
	if text := metricsText(t, m); !strings.Contains(text, `p_hook_enable_kubernetes_bindings_seconds{hook="a.sh"} 2`) {
		t.Errorf("a.sh not recorded once both bindings listed:\n%s", text)
	}
}

// A watch that went idle (it delivered nothing for --watch-idle-timeout)
// counts as shell-operator's dead informer, by GVR and namespace; a watch
// the server ended in the usual way does not.
func TestIdleWatchCountsAsDeadInformer(t *testing.T) {
	m := metrics.New("p_")
	key := informerKey{resource: "/v1, Resource=configmaps", namespace: "ns"}
	inf := &informer{key: key, metrics: m}
	m.InformerStarted(key.resource, key.namespace)
	const series = `p_factory_informer_dead_total{gvr="/v1, Resource=configmaps",namespace="ns"} `
	inf.ended(endTimeout)
	inf.ended(endExpired)
	if text := metricsText(t, m); !strings.Contains(text, series+"0\n") {
		t.Fatalf("want the series at 0 after a timeout and an expiry:\n%s", text)
	}
	inf.ended(endIdle)
	if text := metricsText(t, m); !strings.Contains(text, series+"1\n") {
		t.Fatalf("the idle watch was not counted:\n%s", text)
	}
}
