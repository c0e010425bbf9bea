package faults_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// throttler is an HTTPS proxy in front of the API server that answers
// every tenth request that is not a watch with 429 Too Many Requests and
// Retry-After: 1, as API Priority and Fairness does when a priority level
// is full. It forwards the rest with the cluster's own credentials.
type throttler struct {
	kubeconfig string // reaches the cluster through the throttler
	requests   atomic.Int64
	throttled  atomic.Int64
}

func newThrottler(t *testing.T, c *testcluster.Cluster) *throttler {
	t.Helper()
	p := &throttler{}
	p.kubeconfig = c.Proxy(t, func(upstream http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("watch") != "true" && p.requests.Add(1)%10 == 0 {
				p.throttled.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","reason":"TooManyRequests","code":429}`))
				return
			}
			upstream.ServeHTTP(w, r)
		})
	})
	return p
}

// The API server throttling the operator (429 with Retry-After on a tenth
// of its requests): requests are retried, and nothing is lost.
func TestIntegrationFaultThrottled(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	e := newMirrorEnv(t, c, 100)
	p := newThrottler(t, c)
	startOperator(t, p.kubeconfig, e.hooksDir)
	e.converge(90 * time.Second)
	e.churn(30, 20)
	churned := time.Now()
	done := e.converge(90 * time.Second)
	if p.throttled.Load() == 0 {
		t.Fatalf("the proxy throttled none of %d requests; the test tests nothing", p.requests.Load())
	}
	t.Logf("FIGURE throttled: %d of %d requests answered 429; in step %.2fs after the churn",
		p.throttled.Load(), p.requests.Load(), done.Sub(churned).Seconds())
}
