package faults_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// throttler is an HTTPS proxy in front of the API server that answers
// every tenth request that is not a watch with 429 Too Many Requests and
// Retry-After: 1, as API Priority and Fairness does when a priority level
// is full. It forwards the rest with the cluster's own credentials.
type throttler struct {
	srv       *httptest.Server
	requests  atomic.Int64
	throttled atomic.Int64
}

func newThrottler(t *testing.T, c *testcluster.Cluster) *throttler {
	t.Helper()
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &throttler{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" && p.requests.Add(1)%10 == 0 {
			p.throttled.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","reason":"TooManyRequests","code":429}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// kubeconfig writes a kubeconfig that reaches the cluster through p.
func (p *throttler) kubeconfig(t *testing.T) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["throttled"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["anyone"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["throttled"] = &clientcmdapi.Context{Cluster: "throttled", AuthInfo: "anyone"}
	cfg.CurrentContext = "throttled"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The API server throttling the operator (429 with Retry-After on a tenth
// of its requests): requests are retried, and nothing is lost.
func TestIntegrationFaultThrottled(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	e := newMirrorEnv(t, c, 100)
	p := newThrottler(t, c)
	startOperator(t, p.kubeconfig(t), e.hooksDir)
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
