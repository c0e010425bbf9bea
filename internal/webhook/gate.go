package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/listen"
)

// HealthPath is the liveness path of every webhook listener: GET answers
// 200 while the listener serves, as shell-operator's do.
const HealthPath = "/healthz"

// maxSlotWait is the longest a request waits for a slot: the API server
// waits at most 30 s for a webhook, and says less in ?timeout= when its
// configuration's timeoutSeconds is less.
const maxSlotWait = 30 * time.Second

// gate is in front of the webhook handlers: it answers a request to a
// path that no binding serves 404 before reading anything more; it reads
// a request's body whole, in the body's own time and within the memory
// for bodies, and only then takes a slot to run the handler (see Slots),
// so that clients that send a part of a body and wait hold no slot and
// little memory; and it logs (sampled) and counts the requests answered
// with an error before a hook ran. It answers
// GET /healthz itself, before any of that: liveness probes (shell-operator's
// Deployments probe its webhook ports over HTTPS) take no slot and send no
// client certificate.
type gate struct {
	next http.Handler
	// clientCert: reviews need a client certificate that the client CAs
	// signed (the TLS handshake checks one given, and asks for none, so
	// that probes without one reach /healthz).
	clientCert bool
	// served, when not nil, says whether a path is served; a request to
	// another is answered 404 before its body is read.
	served      func(path string) bool
	slots       *Slots
	bodies      *Bodies
	bodyTimeout time.Duration
	rejected    func(reason string)
	log         logrus.FieldLogger
	sampler     *listen.Sampler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), recorderKey{}, rec))
	defer g.report(rec, r)
	if g.clientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		w.Header().Set("Connection", "close")
		reject(rec, r, http.StatusUnauthorized, "client_certificate", "a review needs a client certificate signed by one of the webhook's client CAs (--webhook-client-ca, --conversion-webhook-client-ca); only GET "+HealthPath+" is answered without one")
		return
	}
	if g.served != nil && !g.served(r.URL.Path) {
		reject(rec, r, http.StatusNotFound, "not_found", "no webhook is served at this path")
		return
	}
	if r.ContentLength > maxReviewBytes {
		reject(rec, r, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a review is at most %d bytes; this one has %d", maxReviewBytes, r.ContentLength))
		return
	}
	deadline := start.Add(g.bodyTimeout)
	_ = http.NewResponseController(w).SetReadDeadline(deadline)
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	body, charged, err := g.bodies.read(ctx, r)
	cancel()
	defer g.bodies.give(sourceOf(r), charged)
	if err != nil {
		rejectBody(rec, r, err)
		return
	}
	r.Body = arrived{Reader: bytes.NewReader(body), data: body}
	give := g.takeSlot(rec, r, int64(len(body)), slotWait(r)-time.Since(start))
	if give == nil {
		return
	}
	defer give()
	g.next.ServeHTTP(rec, r)
}

// takeSlot takes a slot for r, whose body has size bytes, waiting at most
// wait, and returns the function that gives it back; or answers r 503 and
// returns nil.
func (g *gate) takeSlot(w http.ResponseWriter, r *http.Request, size int64, wait time.Duration) (give func()) {
	if r.Context().Err() != nil {
		reject(w, r, http.StatusServiceUnavailable, "busy", "the client left before the request had a webhook slot")
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), max(wait, 0))
	defer cancel()
	source := sourceOf(r)
	give, err := g.slots.take(ctx, source, size)
	switch {
	case err == nil:
		return give
	case r.Context().Err() != nil:
		reject(w, r, http.StatusServiceUnavailable, "busy", "the client left while the request waited for a webhook slot")
	default:
		reject(w, r, http.StatusServiceUnavailable, "busy", fmt.Sprintf("%s for %s", g.slots.busy(source, size), wait.Round(time.Millisecond)))
	}
	return nil
}

// sourceOf is the address r came from, without its port: the key of the
// per-source shares.
func sourceOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// slotWait is how long r may wait for a slot: what the API server says it
// waits (?timeout=, as it calls webhooks), at most maxSlotWait.
func slotWait(r *http.Request) time.Duration {
	if d, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && d > 0 && d < maxSlotWait {
		return d
	}
	return maxSlotWait
}

// report logs (sampled) and counts a request answered with an error.
func (g *gate) report(rec *recorder, r *http.Request) {
	if rec.code < http.StatusBadRequest {
		return
	}
	reason := rec.reason
	if reason == "" {
		reason = reasonOf(rec.code)
	}
	// The path and method are the client's: cut and escaped, so that a
	// path of kilobytes or one holding control characters is a short line
	// that shows what it is.
	g.sampler.Log(g.log.WithFields(logrus.Fields{
		"client": r.RemoteAddr, "method": limit.Printable(limit.Quote(r.Method)), "path": limit.Printable(limit.Quote(r.URL.Path)),
		"code": rec.code, "reason": reason, "error": strings.TrimSpace(rec.text.String()),
	}), logrus.WarnLevel, "webhook request rejected")
	g.rejected(reason) // after the log line, so whoever sees the count can read it
}

// reasonOf names the reason of an error answer that reject did not give.
func reasonOf(code int) string {
	switch code {
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnsupportedMediaType:
		return "content_type"
	case http.StatusBadRequest:
		return "bad_review"
	}
	return "error"
}

type recorderKey struct{}

// reject answers r with an error and tells the gate (when r passed one)
// why, for the log and the metric.
func reject(w http.ResponseWriter, r *http.Request, code int, reason, msg string) {
	if rec, ok := r.Context().Value(recorderKey{}).(*recorder); ok {
		rec.reason = reason
	}
	http.Error(w, msg, code)
}

// recorder keeps the code of an answer, and the start of its text when it
// is an error.
type recorder struct {
	http.ResponseWriter
	code   int
	reason string
	text   strings.Builder
}

// maxErrorText is how much of an error answer is logged.
const maxErrorText = 300

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.code >= http.StatusBadRequest && r.text.Len() < maxErrorText {
		r.text.Write(p[:min(len(p), maxErrorText-r.text.Len())])
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
