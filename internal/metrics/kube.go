package metrics

import (
	"context"
	"net/url"
	"strings"
	"time"

	clientmetrics "k8s.io/client-go/tools/metrics"
)

// ObserveKubeClient makes client-go report every API request's latency
// and result to m: kube_request_duration_seconds{verb} and
// kube_requests_total{code,method}, after the prefix, and while
// shell-operator's families are served (ServeShellOperator, called
// before) its Kubernetes client's as well.
// client-go takes one such registration per process; later calls with
// other metrics do nothing.
func (m *Metrics) ObserveKubeClient() {
	f := factory{m.registry, m.prefix}
	latency := f.histogram("kube_request_duration_seconds", "Latency of requests to the Kubernetes API server, by verb.",
		[]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}, "verb")
	results := f.counter("kube_requests_total", "Requests to the Kubernetes API server, by HTTP status code and method.", "code", "method")
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency: latencyAdapter{latency, m.shell},
		RequestResult:  resultAdapter{results, m.shell},
	})
}

type latencyAdapter struct {
	h     *vec
	shell *shellOperator
}

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	a.h.observe(d.Seconds(), verb)
	if a.shell != nil {
		a.shell.requestLatency.observe(d.Seconds(), urlTemplate(u), verb)
	}
}

type resultAdapter struct {
	c     *vec
	shell *shellOperator
}

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.add(1, code, method)
	if a.shell != nil {
		a.shell.requestResults.add(1, code, shellOperatorComponent, host, method)
	}
}

// urlTemplate returns u as client-go templates a request's URL for its
// metrics, so that the series stay few: each query value {value}, and a
// namespace's name {namespace}. URLs client-go reports come templated
// already (their names too); the watch's own requests (internal/watch)
// come as sent.
func urlTemplate(u url.URL) string {
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"{value}"}
		}
		u.RawQuery = q.Encode()
	}
	segments := strings.Split(u.Path, "/")
	for i := 0; i+2 < len(segments); i++ {
		if segments[i] == "namespaces" && (i == 3 || i == 4) {
			segments[i+1] = "{namespace}"
		}
	}
	u.Path = strings.Join(segments, "/")
	return u.String()
}
