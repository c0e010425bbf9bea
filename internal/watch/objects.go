package watch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

func objectsDesc(m *metrics.Metrics) *prometheus.Desc {
	return prometheus.NewDesc(m.Name("binding_objects"),
		"Objects each kubernetes binding holds now.", []string{"hook", "binding"}, nil)
}

// objectsCollector serves how many objects each binding holds, counted
// when scraped.
type objectsCollector struct {
	w    *Watcher
	desc *prometheus.Desc
}

func (c objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c objectsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.w.bindings {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(b.Count()), b.Hook.Name, b.cfg.Name)
	}
}
