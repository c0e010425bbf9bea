package testcluster

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Proxy starts an HTTPS server in front of the cluster's API server, which
// forwards requests with the cluster's own credentials (watches streamed as
// they come) through wrap, so that a test can hold, silence or refuse some
// of them. It returns a kubeconfig that reaches the cluster through it,
// with no credentials of its own. The server stops when the test ends.
func (c *Cluster) Proxy(t testing.TB, wrap func(upstream http.Handler) http.Handler) string {
	t.Helper()
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	upstream := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewTLSServer(wrap(upstream))
	t.Cleanup(srv.Close)

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxied"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["anyone"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxied"] = &clientcmdapi.Context{Cluster: "proxied", AuthInfo: "anyone"}
	cfg.CurrentContext = "proxied"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
