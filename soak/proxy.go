package main

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// throttleProxy stands between the replicas and the API server: it
// forwards every request with the harness's own credentials and, while
// throttling, answers each with 429 Too Many Requests and Retry-After: 1,
// as the API server's priority and fairness does when a flow's queue is
// full. (The harness's user is in system:masters, which priority and
// fairness exempts, so a FlowSchema cannot make the real one answer 429.)
type throttleProxy struct {
	listener   net.Listener
	throttling atomic.Bool
	answered   atomic.Int64 // 429s sent
}

// startProxy listens on a free port of 127.0.0.1 with the certificate in
// certs and forwards to the API server of cfg.
func startProxy(cfg *rest.Config, certs string) (*throttleProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"))
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	p := &throttleProxy{listener: ln}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		// A replica's request cut by a fault is the replica's to report.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.throttling.Load() {
			p.answered.Add(1)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"soak: throttled by the harness","reason":"TooManyRequests","code":429}`))
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	return p, nil
}

// Host is the proxy's URL.
func (p *throttleProxy) Host() string { return "https://" + p.listener.Addr().String() }
