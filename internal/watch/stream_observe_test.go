package watch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// Watch requests count in kube_requests_total like client-go's own
// requests, and the warnings the API server sends with them are logged.
func TestWatchRequestsCountedAndWarningsLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("labelSelector") == "missing" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Add("Warning", `299 - "v1 Widget is deprecated; use v2 Widget"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"1"}}}` + "\n"))
	}))
	defer srv.Close()
	m := kubeClientMetrics()
	before := requestCounts(t, m)
	clients, err := kube.NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	s := newStreams(clients.Watches, clients.Unversioned, log)

	w, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{}, streamHooks{failed: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, w)
	if _, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{LabelSelector: "missing"}, streamHooks{failed: func(error) {}}); err == nil {
		t.Fatal("a 404 answer started a watch")
	}

	after := requestCounts(t, m)
	for _, series := range []string{`{code="200",method="GET"}`, `{code="404",method="GET"}`} {
		if got := after[series] - before[series]; got != 1 {
			t.Errorf("hook_operator_kube_requests_total%s rose by %v, want 1 (before %v, after %v)", series, got, before, after)
		}
	}
	var warned bool
	for _, e := range hook.AllEntries() {
		warned = warned || e.Level == logrus.WarnLevel && strings.Contains(e.Message, "v1 Widget is deprecated; use v2 Widget")
	}
	if !warned {
		t.Errorf("the API server's warning was not logged: %v", hook.AllEntries())
	}
}

// kubeClientMetrics is the Metrics that client-go reports to in this test
// binary: client-go takes one registration per process, so a test that runs
// twice in one process (-count 2, -cpu 1,2) reads the counters of the first.
var kubeClientMetrics = sync.OnceValue(func() *metrics.Metrics {
	m := metrics.New(metrics.DefaultPrefix)
	m.ObserveKubeClient()
	return m
})

// requestCounts reads hook_operator_kube_requests_total from m's /metrics,
// by its labels as written there.
func requestCounts(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	counts := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		rest, ok := strings.CutPrefix(line, "hook_operator_kube_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			t.Fatalf("/metrics: cannot read %q", line)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		counts["{"+labels+"}"] = v
	}
	return counts
}
