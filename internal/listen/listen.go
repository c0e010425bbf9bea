// Package listen holds what every HTTP listener of the operator shares
// (the metrics and health listener, the webhook listeners): a cap on open
// connections, from one source and all together (where the sources with
// the most give way to newcomers), timeouts on every phase of a request,
// a small header limit, HTTP/2 limits (streams per connection, receive
// buffers, and the sources that cancel streams as fast as they open them
// cut off for a while), and http.Server's own error messages (TLS
// handshake failures among them) logged through logrus at a rate a flood
// of bad connections cannot turn into a flood of lines.
//
// It imports no package of the operator's: internal/server and
// internal/webhook both build on it.
package listen

import (
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
)

// Limits bound one listener. A zero field takes the default of Defaults.
type Limits struct {
	// MaxConns is the most connections open at once. When every place is
	// taken, a new connection takes the place of the oldest of the source
	// with the most, if that source has more than the newcomer's would;
	// otherwise it is closed at once (or, where MaxConnsPerSource is
	// MaxConns or more, it waits for a place, and the next ones in the
	// kernel's backlog).
	MaxConns int
	// MaxConnsPerSource is the most connections open at once from one IP
	// address; more are closed as soon as they are accepted (0: a quarter
	// of MaxConns, at least 16; at MaxConns or more, a source's next
	// connections wait as others' do). Connections that are not TCP (a
	// Unix socket's) are not counted by source.
	MaxConnsPerSource int
	// ReadHeader, Read, Write and Idle are http.Server's timeouts of the
	// same names. ReadHeader also bounds a TLS handshake (net/http gives
	// the handshake the smallest of its timeouts), so a connection that
	// never starts one holds its slot that long at most.
	ReadHeader, Read, Write, Idle time.Duration
	// MaxHeaderBytes bounds a request's header (http.Server's field of the
	// same name, for HTTP/2 too).
	MaxHeaderBytes int
	// MaxStreams is the most HTTP/2 streams (requests) a connection may
	// have open at once.
	MaxStreams int
	// Refused, when not nil, is told each connection the listener closed
	// by itself, with the reason (ReasonPerSource, ReasonFull,
	// ReasonEvicted, ReasonResetFlood) and the client's address.
	Refused func(reason, client string)
}

// The reasons told to Limits.Refused.
const (
	// ReasonPerSource: the connection's source had MaxConnsPerSource open.
	ReasonPerSource = "per_source"
	// ReasonFull: every place was taken, and no source had more than
	// the newcomer's would.
	ReasonFull = "full"
	// ReasonEvicted: the connection, the oldest of the source with the
	// most, gave its place to one from a source with fewer.
	ReasonEvicted = "evicted"
	// ReasonResetFlood: the client's source cancelled HTTP/2 streams
	// right after opening them, faster than a client with work to do
	// does; its connections are closed, and its new ones for a few
	// seconds.
	ReasonResetFlood = "reset_flood"
)

// Defaults are the limits of a listener that sets none. The header limit
// holds the API server's reviews and Prometheus' bearer tokens (a few KiB)
// many times over.
var Defaults = Limits{MaxConns: 128, ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 90 * time.Second,
	MaxHeaderBytes: 16 << 10, MaxStreams: 16}

// The HTTP/2 receive buffers: what a client may send that no handler has
// read yet, per stream and per connection (HTTP/2's least window, 64 KiB),
// and the largest frame read.
const (
	h2StreamBuffer = 32 << 10
	h2ConnBuffer   = 64 << 10
	h2MaxFrame     = 16 << 10
)

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = Defaults.MaxConns
	}
	if l.MaxConnsPerSource <= 0 {
		l.MaxConnsPerSource = max(l.MaxConns/4, 16)
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = Defaults.MaxHeaderBytes
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = Defaults.MaxStreams
	}
	def(&l.ReadHeader, Defaults.ReadHeader)
	def(&l.Read, Defaults.Read)
	def(&l.Write, Defaults.Write)
	def(&l.Idle, Defaults.Idle)
	return l
}

// Limit returns ln accepting at most l.MaxConns connections at once, and
// at most l.MaxConnsPerSource from one source; the client whose
// connection it closes is told to l.Refused.
func (l Limits) Limit(ln net.Listener) net.Listener {
	return newLimitListener(ln, l.withDefaults())
}

// Server returns an http.Server for h with l's timeouts, header and HTTP/2
// limits, whose own errors go to logger (see ErrorLog). Serve it on
// l.Limit of a listener.
func (l Limits) Server(h http.Handler, logger logrus.FieldLogger, handshakeFailed func()) *http.Server {
	l = l.withDefaults()
	sampler := NewSampler(10, time.Second)
	resetFlood := func(client string) {
		if l.Refused != nil {
			l.Refused(ReasonResetFlood, client)
		}
		sampler.Log(logger.WithField("client", client), logrus.WarnLevel, "connection closed: its source cancelled HTTP/2 streams as fast as it opened them (a TCP source's connections are refused for "+resetBan.String()+")")
	}
	return &http.Server{
		Handler:           watchResets(h, resetFlood),
		ConnContext:       watchConn,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: l.MaxStreams, MaxReadFrameSize: h2MaxFrame,
			MaxReceiveBufferPerConnection: h2ConnBuffer, MaxReceiveBufferPerStream: h2StreamBuffer},
		ErrorLog: ErrorLog(logger, handshakeFailed),
	}
}

// Sampler lets through a burst of log lines and then one per interval,
// and counts the lines it held back, so that a flood of bad requests or
// connections costs a few lines of log a second at most.
type Sampler struct {
	lim *rate.Limiter

	mu         sync.Mutex
	suppressed int
}

// NewSampler returns a sampler of burst lines, then one every `every`.
func NewSampler(burst int, every time.Duration) *Sampler {
	return &Sampler{lim: rate.NewLimiter(rate.Every(every), burst)}
}

// Allow reports whether a line may be logged now, and how many were held
// back since the last one let through (to be logged with it).
func (s *Sampler) Allow() (ok bool, suppressed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lim.Allow() {
		s.suppressed++
		return false, 0
	}
	n := s.suppressed
	s.suppressed = 0
	return true, n
}

// Log logs entry at level when s allows it, with the count of lines held
// back before it.
func (s *Sampler) Log(entry logrus.FieldLogger, level logrus.Level, msg string) {
	ok, n := s.Allow()
	if !ok {
		return
	}
	if n > 0 {
		entry = entry.WithField("suppressed", n)
	}
	switch level {
	case logrus.ErrorLevel:
		entry.Error(msg)
	case logrus.WarnLevel:
		entry.Warn(msg)
	default:
		entry.Info(msg)
	}
}

// handshakePrefix starts net/http's message about a failed TLS handshake:
// "http: TLS handshake error from ADDR: ERROR".
const handshakePrefix = "http: TLS handshake error from "

// ErrorLog returns a logger for http.Server.ErrorLog that writes the
// server's messages through logger, sampled: a failed TLS handshake as a
// warning with the client's address (and handshakeFailed called, when not
// nil, for every one, sampled or not), anything else as an error.
func ErrorLog(logger logrus.FieldLogger, handshakeFailed func()) *log.Logger {
	return log.New(&errorWriter{log: logger, sampler: NewSampler(10, time.Second), handshakeFailed: handshakeFailed}, "", 0)
}

type errorWriter struct {
	log             logrus.FieldLogger
	sampler         *Sampler
	handshakeFailed func()
}

func (w *errorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if rest, ok := strings.CutPrefix(msg, handshakePrefix); ok {
		if w.handshakeFailed != nil {
			w.handshakeFailed()
		}
		client, why, _ := strings.Cut(rest, ": ")
		w.sampler.Log(w.log.WithFields(logrus.Fields{"client": client, "error": why}), logrus.WarnLevel, "TLS handshake failed")
		return len(p), nil
	}
	w.sampler.Log(w.log.WithField("error", msg), logrus.ErrorLevel, "HTTP server error")
	return len(p), nil
}
