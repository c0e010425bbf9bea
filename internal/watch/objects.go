package watch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

func objectsDesc(m *metrics.Metrics) *prometheus.Desc {
	return prometheus.NewDesc(m.Name("binding_objects"),
		"Objects each kubernetes binding holds now.", []string{"hook", "binding"}, nil)
}

func cachedDesc(m *metrics.Metrics) *prometheus.Desc {
	return prometheus.NewDesc(m.Name("watch_cached_objects"),
		"Objects the watches of a resource hold in memory now (with --sharding, only this replica's share where the API server filters by shard).", []string{"resource"}, nil)
}

// objectsCollector serves how many objects each binding holds, and how
// many the watches of each resource cache, counted when scraped.
type objectsCollector struct {
	w            *Watcher
	desc, cached *prometheus.Desc
}

func (c objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.cached }

func (c objectsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.w.all() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(b.Count()), b.Hook.Name, b.cfg.Name)
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
			byResource[inf.key.resource] += len(inf.store.ListKeys())
		}
	}
	for res, n := range byResource {
		ch <- prometheus.MustNewConstMetric(c.cached, prometheus.GaugeValue, float64(n), res)
	}
}
