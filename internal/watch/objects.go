package watch

import (
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// objectsCollector serves how many objects each binding holds, and how
// many the watches of each resource cache, counted when scraped.
// While shell-operator's families are served, it serves the same count as
// its kube_snapshot_objects{hook,binding,queue} too.
type objectsCollector struct {
	w               *Watcher
	objects, cached string
	// snapshot is shell-operator's name, "" when its families are not
	// served.
	snapshot string
}

func newObjectsCollector(w *Watcher, m *metrics.Metrics) objectsCollector {
	return objectsCollector{w: w, objects: m.Name("binding_objects"), cached: m.Name("watch_cached_objects"),
		snapshot: m.ShellOperatorName(metrics.SnapshotObjects)}
}

func (c objectsCollector) Names() []string {
	if c.snapshot != "" {
		return []string{c.objects, c.cached, c.snapshot}
	}
	return []string{c.objects, c.cached}
}

func (c objectsCollector) Collect() []metrics.Family {
	objects := metrics.Family{Name: c.objects, Help: "Objects each kubernetes binding holds now.", Kind: metrics.Gauge, Labels: []string{"hook", "binding"}}
	snapshot := metrics.Family{Name: c.snapshot, Help: "Objects each kubernetes binding holds now (shell-operator's name).", Kind: metrics.Gauge, Labels: []string{"hook", "binding", "queue"}}
	for _, b := range c.w.all() {
		n := float64(b.Count())
		objects.Series = append(objects.Series, metrics.Series{Values: []string{b.Hook.Name, b.cfg.Name}, Value: n})
		if c.snapshot != "" {
			snapshot.Series = append(snapshot.Series, metrics.Series{Values: []string{b.Hook.Name, b.cfg.Name, b.cfg.Queue}, Value: n})
		}
	}
	c.w.mu.Lock()
	infs := make([]*informer, 0, len(c.w.informers))
	for _, inf := range c.w.informers {
		infs = append(infs, inf)
	}
	c.w.mu.Unlock()
	byResource := map[string]int{}
	for _, inf := range infs {
		if inf.listed() {
			byResource[inf.key.resource] += inf.store.len()
		}
	}
	cached := metrics.Family{Name: c.cached, Help: "Objects the watches of a resource hold in memory now (with --sharding, only this replica's share where the API server filters by shard).",
		Kind: metrics.Gauge, Labels: []string{"resource"}}
	for res, n := range byResource {
		cached.Series = append(cached.Series, metrics.Series{Values: []string{res}, Value: float64(n)})
	}
	if c.snapshot != "" {
		return []metrics.Family{objects, cached, snapshot}
	}
	return []metrics.Family{objects, cached}
}
