package watch

import (
	"sync/atomic"
	"time"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

// enableTimer measures how long the kubernetes bindings of one hook that
// started together (at start-up, in a reload, or one whose kind became
// served) took until every one of them had listed: what shell-operator
// serves as hook_enable_kubernetes_bindings_seconds, the time to start a
// hook's informers. A binding removed before it listed leaves the timer
// unfinished: nothing is recorded for that start.
type enableTimer struct {
	hook    string
	began   time.Time
	left    atomic.Int32
	metrics *metrics.Metrics
}

// listed counts one of the timer's bindings as listed; the last records
// the time.
func (t *enableTimer) listed() {
	if t.left.Add(-1) == 0 {
		t.metrics.KubernetesBindingsEnabled(t.hook, time.Since(t.began))
	}
}

// enableTimers returns, by hook name, a timer for the bindings started
// together that began at began.
func (w *Watcher) enableTimers(bindings []*Binding, began time.Time) map[string]*enableTimer {
	timers := map[string]*enableTimer{}
	for _, b := range bindings {
		t := timers[b.Hook.Name]
		if t == nil {
			t = &enableTimer{hook: b.Hook.Name, began: began, metrics: w.metrics}
			timers[b.Hook.Name] = t
		}
		t.left.Add(1)
	}
	return timers
}
