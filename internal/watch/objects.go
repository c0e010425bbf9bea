package watch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

var objectsDesc = prometheus.NewDesc(metrics.Namespace+"_binding_objects",
	"Objects each kubernetes binding holds now.", []string{"hook", "binding"}, nil)

// objectsCollector serves how many objects each binding holds, counted
// when scraped.
type objectsCollector struct{ w *Watcher }

func (c objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objectsDesc }

func (c objectsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.w.bindings {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(b.Count()), b.Hook.Name, b.cfg.Name)
	}
}
