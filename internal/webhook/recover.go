package webhook

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

// recoverRequest, deferred at the top of a webhook handler, answers a
// request whose handling panicked with a 500 that says so, where net/http
// alone would drop the connection, tells logf of the panic with its stack
// (never the request, which holds objects' data), and tells the gate the
// reason metrics.WebhookPanic for its log and metric (which counts it as
// a recovered panic too). A hostile request or a hook's odd answer fails
// its own request, not the server. http.ErrAbortHandler goes on: it is how
// a handler asks net/http to drop a connection.
func recoverRequest(w http.ResponseWriter, r *http.Request, logf func(error)) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	logf(fmt.Errorf("recovered panic while serving %s: %v\n%s", r.URL.Path, v, debug.Stack()))
	reject(w, r, http.StatusInternalServerError, metrics.WebhookPanic, "the webhook server failed while handling this request (a recovered panic: a bug); the operator's log has the stack")
}
