package watch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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
	m := metrics.New(metrics.DefaultPrefix)
	m.ObserveKubeClient() // client-go takes one registration per process: this test binary's
	clients, err := kube.NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	s := newStreams(clients.Unversioned, log)

	w, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{}, streamHooks{failed: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, w)
	if _, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{LabelSelector: "missing"}, streamHooks{failed: func(error) {}}); err == nil {
		t.Fatal("a 404 answer started a watch")
	}

	expected := `
# HELP hook_operator_kube_requests_total Requests to the Kubernetes API server, by HTTP status code and method.
# TYPE hook_operator_kube_requests_total counter
hook_operator_kube_requests_total{code="200",method="GET"} 1
hook_operator_kube_requests_total{code="404",method="GET"} 1
`
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), expected[1:]) {
		t.Errorf("/metrics lacks\n%s\nit serves:\n%s", expected, rec.Body)
	}
	var warned bool
	for _, e := range hook.AllEntries() {
		warned = warned || e.Level == logrus.WarnLevel && strings.Contains(e.Message, "v1 Widget is deprecated; use v2 Widget")
	}
	if !warned {
		t.Errorf("the API server's warning was not logged: %v", hook.AllEntries())
	}
}
