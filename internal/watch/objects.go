package watch

import (
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// objectsCollector serves how many objects each binding holds, and how
// many the watches of each resource cache, counted when scraped.
type objectsCollector struct {
	w               *Watcher
	objects, cached string
}

func newObjectsCollector(w *Watcher, m *metrics.Metrics) objectsCollector {
	return objectsCollector{w: w, objects: m.Name("binding_objects"), cached: m.Name("watch_cached_objects")}
}

func (c objectsCollector) Names() []string { return []string{c.objects, c.cached} }

func (c objectsCollector) Collect() []metrics.Family {
	objects := metrics.Family{Name: c.objects, Help: "Objects each kubernetes binding holds now.", Kind: metrics.Gauge, Labels: []string{"hook", "binding"}}
	for _, b := range c.w.all() {
		objects.Series = append(objects.Series, metrics.Series{Values: []string{b.Hook.Name, b.cfg.Name}, Value: float64(b.Count())})
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
	return []metrics.Family{objects, cached}
}
