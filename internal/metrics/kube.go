package metrics

import (
	"context"
	"net/url"
	"time"

	clientmetrics "k8s.io/client-go/tools/metrics"
)

// ObserveKubeClient makes client-go report every API request's latency
// and result to m: kube_request_duration_seconds{verb} and
// kube_requests_total{code,method}, after the prefix.
// client-go takes one such registration per process; later calls with
// other metrics do nothing.
func (m *Metrics) ObserveKubeClient() {
	f := factory{m.registry, m.prefix}
	latency := f.histogram("kube_request_duration_seconds", "Latency of requests to the Kubernetes API server, by verb.",
		[]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}, "verb")
	results := f.counter("kube_requests_total", "Requests to the Kubernetes API server, by HTTP status code and method.", "code", "method")
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency: latencyAdapter{latency},
		RequestResult:  resultAdapter{results},
	})
}

type latencyAdapter struct{ h *vec }

func (a latencyAdapter) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	a.h.observe(d.Seconds(), verb)
}

type resultAdapter struct{ c *vec }

func (a resultAdapter) Increment(_ context.Context, code, method, _ string) {
	a.c.add(1, code, method)
}
