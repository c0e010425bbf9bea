package server

import (
	"net/http"
	"time"

	"github.com/hook-operator/hook-operator/internal/listen"
)

// The probe listener (Options.HealthAddress) serves /healthz and /readyz
// alone, so that whatever loads the metrics listener (a scraper, a pod
// holding idle sockets) cannot make a probe wait: kubelet's probes time
// out after a second, and a liveness probe that times out restarts the
// operator. Its bounds are tight, for what a probe sends: one GET with a
// few headers and no body. A source (kubelet probes from the node's
// address, a connection per probe) may hold 8 connections; more are closed
// at once rather than queued ahead of the probes of others, and an idle
// one is closed after 2 s. 1,024 connections in all (about 20 MB when all
// are open and idle) take 128 sources holding idle sockets to fill; a
// probe then waits in the backlog until one times out.
var healthLimits = listen.Limits{
	MaxConns:          1024,
	MaxConnsPerSource: 8,
	ReadHeader:        2 * time.Second,
	Read:              2 * time.Second,
	// /readyz may wait for a readiness check.
	Write:          readyCheckTimeout + 2*time.Second,
	Idle:           5 * time.Second,
	MaxHeaderBytes: 4 << 10,
}

// healthHandler serves /healthz and /readyz, and refuses a request with a
// body (a probe sends none) without reading it.
func healthHandler(op Operator, ready *readiness) http.Handler {
	mux := http.NewServeMux()
	addProbes(mux, op, ready)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
			http.Error(w, "a probe sends no body", http.StatusRequestEntityTooLarge)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
