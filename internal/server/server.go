// Package server is the operator's HTTP listeners. The TCP listener serves
// Prometheus metrics on /metrics, liveness on /healthz and readiness on
// /readyz; the probe listener serves /healthz and /readyz alone, with
// tight bounds of its own, so that no load on the first delays a probe.
// The debug routes under /debug/ that `hook-operator debug` reads
// (queues, hooks, and snapshots, which hold object data) are served on a
// unix socket only the operator's user can open, and on the TCP listener
// only when asked. Go's pprof profiles under /debug/pprof/ go wherever the
// debug routes go, when enabled.
//
// Every listener is bounded (see package listen): a cap on connections,
// timeouts on reading, writing and idle connections. /readyz answers from a
// state checked when asked, at most once per ReadyInterval, so that its
// callers, however many, cost the API server one check per ReadyInterval.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/listen"
	"github.com/hook-operator/hook-operator/internal/queue"
)

// Debug routes, as `hook-operator debug` asks for them.
const (
	QueuesPath    = "/debug/queues"
	HooksPath     = "/debug/hooks"
	SnapshotsPath = "/debug/snapshots"
	RolePath      = "/debug/role"
)

// Operator is what the listener reports on: *operator.Operator.
type Operator interface {
	Alive() error
	Ready(ctx context.Context) (bool, []string)
	Queues() []queue.QueueState
	Hooks() []debugapi.HookState
	Snapshots(hook string) ([]debugapi.SnapshotState, error)
	Role() debugapi.RoleState
}

// Options configure the listeners.
type Options struct {
	// Address is host:port to listen on (":9115"; port 0 picks one);
	// empty serves no TCP listener.
	Address string
	// HealthAddress is host:port of the probe listener, which serves
	// /healthz and /readyz only (":9116"); empty serves none.
	HealthAddress string
	// HealthOptional: HealthAddress is a default the user did not ask
	// for, so a port already taken there (another operator on the host)
	// is a warning, and the probes are served on Address alone.
	HealthOptional bool
	// DebugSocket is the unix socket of the debug routes; empty serves
	// none there.
	DebugSocket string
	// DebugSocketOptional: DebugSocket is a default the user did not ask
	// for, so one that another live process serves is left to it, with a
	// warning, and none is served here.
	DebugSocketOptional bool
	// DebugOverHTTP serves the debug routes on Address too.
	DebugOverHTTP bool
	// Metrics serves /metrics; nil serves none.
	Metrics http.Handler
	// HookMetrics serves /metrics/hooks (only the hooks' metrics, where
	// shell-operator serves them); nil serves none.
	HookMetrics http.Handler
	// Pprof serves Go's profiles with the debug routes.
	Pprof bool
	// MaxConns caps the open connections of each listener (0: 128).
	MaxConns int
	// Secure, when set, serves /metrics and /metrics/hooks on its HTTPS
	// listener to authorized callers only, and not on Address.
	Secure *SecureMetrics
	// ReadyInterval is how old the readiness /readyz answers with may be:
	// a request after it starts a new check (0: DefaultReadyInterval).
	ReadyInterval time.Duration
}

// DefaultReadyInterval is ReadyInterval when Options set nothing.
const DefaultReadyInterval = time.Second

// Addresses are those Start listens on; "" where it does not.
type Addresses struct {
	// Listen is Options.Address's, Health the probe listener's and Secure
	// the secure metrics listener's.
	Listen, Health, Secure string
}

// Start listens and serves until ctx ends. It returns the addresses it
// listens on.
func Start(ctx context.Context, op Operator, opts Options, log logrus.FieldLogger) (Addresses, error) {
	var addrs Addresses
	if opts.Secure != nil {
		secureAddr, err := startSecure(ctx, opts.Secure, opts, log)
		if err != nil {
			return Addresses{}, err
		}
		addrs.Secure = secureAddr
		opts.Metrics, opts.HookMetrics = nil, nil
	}
	// Every listener is opened before any is served, so that an error
	// leaves none behind.
	var tcp, health, sock net.Listener
	closeAll := func() {
		for _, ln := range []net.Listener{tcp, health} {
			if ln != nil {
				_ = ln.Close()
			}
		}
	}
	var err error
	if opts.Address != "" {
		if tcp, err = net.Listen("tcp", opts.Address); err != nil {
			return Addresses{}, fmt.Errorf("--listen-address %s: %w", opts.Address, err)
		}
		addrs.Listen = tcp.Addr().String()
	}
	if opts.HealthAddress != "" {
		health, err = net.Listen("tcp", opts.HealthAddress)
		switch {
		case err != nil && opts.HealthOptional && errors.Is(err, syscall.EADDRINUSE):
			log.WithError(err).WithField("healthAddress", opts.HealthAddress).Warn(healthTaken(addrs.Listen))
			health = nil
		case err != nil:
			closeAll()
			return Addresses{}, fmt.Errorf("--health-listen-address %s: %w", opts.HealthAddress, err)
		default:
			addrs.Health = health.Addr().String()
		}
	}
	if opts.DebugSocket != "" {
		sock, err = listenUnix(opts.DebugSocket)
		switch {
		case err != nil && opts.DebugSocketOptional && errors.Is(err, errSocketInUse):
			log.WithField("debugSocket", opts.DebugSocket).Warn("another process serves the default debug socket (another operator on this host?), so this one serves none: set --debug-socket to a path of its own for hook-operator debug to reach it")
			sock = nil
		case err != nil:
			closeAll()
			return Addresses{}, fmt.Errorf("--debug-socket %s: %w", opts.DebugSocket, err)
		}
	}
	ready := newReadiness(ctx, op, opts.ReadyInterval)
	if tcp != nil {
		serve(ctx, tcp, handler(op, ready, opts, true, opts.DebugOverHTTP), limits(opts, opts.DebugOverHTTP), log)
	}
	if health != nil {
		serve(ctx, health, healthHandler(op, ready), healthLimits, log)
	}
	if sock != nil {
		serve(ctx, sock, handler(op, ready, opts, false, true), limits(opts, true), log)
	}
	return addrs, nil
}

// healthTaken says what becomes of the probes when the default probe
// port is taken.
func healthTaken(listen string) string {
	where := "/healthz and /readyz are served on --listen-address " + listen + " alone"
	if listen == "" {
		where = "/healthz and /readyz are not served (--listen-address is empty too)"
	}
	return "the probe listener's default port is taken (another operator on this host?), so " + where +
		"; set --health-listen-address to a free host:port for probes of their own, or to empty to say none"
}

// errSocketInUse: another process answers on the socket.
var errSocketInUse = errors.New("another process serves this socket: give each operator a socket of its own")

// listenUnix listens on a socket only the operator's user may use,
// replacing a stale socket left by an earlier process (one that nothing
// answers on).
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, errors.New("a file that is not a socket is in the way")
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, errSocketInUse
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	return ln, os.Chmod(path, 0o600)
}

// limits are a listener's: the defaults, with time to write a CPU profile
// (30 s by default) where pprof is served.
func limits(opts Options, debug bool) listen.Limits {
	l := listen.Defaults
	if opts.MaxConns > 0 {
		l.MaxConns = opts.MaxConns
	}
	if debug && opts.Pprof {
		l.Write = 2 * time.Minute
	}
	return l
}

func serve(ctx context.Context, ln net.Listener, h http.Handler, l listen.Limits, log logrus.FieldLogger) {
	closed := listen.NewSampler(10, time.Second)
	l.Refused = func(reason, client string) {
		if reason == listen.ReasonResetFlood {
			return // the server logs those itself
		}
		closed.Log(log.WithFields(logrus.Fields{"address": ln.Addr().String(), "client": client, "reason": reason}), logrus.WarnLevel, "connection closed")
	}
	srv := l.Server(h, log, nil)
	ln = l.Limit(ln)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).WithField("address", ln.Addr().String()).Error("an HTTP listener stopped")
		}
	}()
}

// Handler returns every route: what the TCP listener serves with
// DebugOverHTTP. Readiness is checked in the background until ctx ends.
func Handler(ctx context.Context, op Operator, opts Options) http.Handler {
	return handler(op, newReadiness(ctx, op, opts.ReadyInterval), opts, true, true)
}

// handler returns the health and metrics routes (public) and the debug
// routes (debug): with the public ones on the TCP listener, behind
// guardDebug.
func handler(op Operator, ready *readiness, opts Options, public, debug bool) http.Handler {
	mux := http.NewServeMux()
	if !public {
		if debug {
			addDebug(mux, op, opts.Pprof)
		}
		return mux
	}
	if debug {
		routes := http.NewServeMux()
		addDebug(routes, op, opts.Pprof)
		mux.Handle("/debug/", guardDebug(routes, opts.Address))
	}
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	if opts.HookMetrics != nil {
		mux.Handle("GET /metrics/hooks", opts.HookMetrics)
	}
	addProbes(mux, op, ready)
	return mux
}

// addProbes adds /healthz (the operator's loops are alive) and /readyz
// (readiness as last checked, see readiness).
func addProbes(mux *http.ServeMux, op Operator, ready *readiness) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := op.Alive(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyCheckTimeout)
		defer cancel()
		ok, why := ready.get(ctx)
		if !ok {
			// Hook and binding names come from the hooks folder: escaped,
			// so each reason stays one line of plain text.
			lines := make([]string, len(why))
			for i, w := range why {
				lines[i] = limit.Printable(w)
			}
			http.Error(w, "not ready:\n"+strings.Join(lines, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

func addDebug(mux *http.ServeMux, op Operator, withPprof bool) {
	mux.HandleFunc("GET "+QueuesPath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, op.Queues()) })
	mux.HandleFunc("GET "+HooksPath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, op.Hooks()) })
	mux.HandleFunc("GET "+RolePath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, op.Role()) })
	addActions(mux, op)
	mux.HandleFunc("GET "+SnapshotsPath, func(w http.ResponseWriter, r *http.Request) {
		hook := r.URL.Query().Get("hook")
		if hook == "" {
			http.Error(w, "name the hook: ?hook=PATH", http.StatusBadRequest)
			return
		}
		snaps, err := op.Snapshots(hook)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, snaps)
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
