package watch

import (
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// How fresh each binding's view is: its informers record when they last
// heard from the API server (an event, a bookmark, a list that succeeded),
// and a binding's view is as old as its oldest informer's. Above the
// binding's stale threshold (hook.StaleAfterOf) the view is stale; the
// same threshold ends a silent watch so that it lists again (streamHooks.idle).

// epoch is the origin of informer.fresh: a monotonic clock reading.
var epoch = time.Now()

// touch records that the informer's view is current as of at: an event
// or a bookmark arrived, or a list succeeded. A watch that went idle is
// no longer stale then.
func (i *informer) touch(at time.Time) {
	i.fresh.Store(int64(at.Sub(epoch)))
	i.stale.Store(false)
}

// age returns how long ago the informer's view was last known current, and
// false before it started.
func (i *informer) age(now time.Time) (time.Duration, bool) {
	f := i.fresh.Load()
	if f == 0 {
		return 0, false
	}
	return now.Sub(epoch) - time.Duration(f), true
}

// staleAfter returns the stale threshold of the informer's bindings, the
// shortest they set (zero: never stale).
func (i *informer) staleAfter() time.Duration {
	var d time.Duration
	for _, b := range i.bindings {
		if t := hook.StaleAfterOf(b.cfg, b.Hook.Config.Settings, i.defaultIdle); t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	return d
}

// Freshness returns how long ago binding b's view was last known current
// (its oldest watch's latest event, bookmark or successful list), and the
// age above which its view is stale (zero: never). ok is false while b
// watches nothing (its kind is not served, or it matches no namespace).
func (w *Watcher) Freshness(b *Binding) (age, staleAfter time.Duration, ok bool) {
	staleAfter = hook.StaleAfterOf(b.cfg, b.Hook.Config.Settings, w.idle)
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, src := range b.sources {
		if inf, isInf := src.inf.(*informer); isInf {
			if a, started := inf.age(now); started {
				age, ok = max(age, a), true
			}
		}
	}
	return age, staleAfter, ok
}

// freshnessCollector serves each binding's view age and stale threshold,
// read when scraped: binding_view_age_seconds and
// binding_stale_after_seconds (after the metric prefix).
type freshnessCollector struct {
	w               *Watcher
	age, staleAfter string
}

func newFreshnessCollector(w *Watcher, m *metrics.Metrics) freshnessCollector {
	return freshnessCollector{w: w, age: m.Name("binding_view_age_seconds"), staleAfter: m.Name("binding_stale_after_seconds")}
}

func (c freshnessCollector) Names() []string { return []string{c.age, c.staleAfter} }

func (c freshnessCollector) Collect() []metrics.Family {
	labels := []string{"hook", "binding"}
	age := metrics.Family{Name: c.age, Kind: metrics.Gauge, Labels: labels,
		Help: "Seconds since each kubernetes binding's view was last known current: the latest event, bookmark or successful list of its oldest watch."}
	threshold := metrics.Family{Name: c.staleAfter, Kind: metrics.Gauge, Labels: labels,
		Help: "The view age above which a kubernetes binding is stale and its watch is listed again: its staleAfter, else --watch-idle-timeout."}
	for _, b := range c.w.all() {
		a, after, ok := c.w.Freshness(b)
		if !ok {
			continue
		}
		values := []string{b.Hook.Name, b.cfg.Name}
		age.Series = append(age.Series, metrics.Series{Values: values, Value: a.Seconds()})
		if after > 0 {
			threshold.Series = append(threshold.Series, metrics.Series{Values: values, Value: after.Seconds()})
		}
	}
	return []metrics.Family{age, threshold}
}
