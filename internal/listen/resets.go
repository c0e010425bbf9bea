package listen

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A client that opens HTTP/2 streams and cancels them at once (a "rapid
// reset" flood) costs the server a handler for each stream while never
// having more than a few open, so the cap on concurrent streams does not
// bound it. A source whose connections, all together, end streams this
// way faster than earlyResetRate, after a burst of earlyResetBurst, has
// every one of them closed, and its new connections are closed as soon
// as they are accepted for resetBan: a client that dials again each time
// it is cut gets no new budget with each connection. Connections that are
// not counted by source (a Unix socket's) each have a budget of their
// own.
const (
	// earlyReset is how soon after its handler started a stream must be
	// cancelled by the client to count: the API server gives a webhook at
	// least a second before it gives up, so its own cancellations do not
	// count.
	earlyReset      = 500 * time.Millisecond
	earlyResetBurst = 100
	earlyResetRate  = 10 // a second
	resetBan        = 5 * time.Second
	// resetSources bounds the sources whose resets are remembered; a
	// source is remembered from its first early reset until its budget
	// is whole again and its ban over.
	resetSources = 4096
)

// resetBudgets holds the early-reset budget of each source that has had
// early resets, and when each banned source may connect again.
type resetBudgets struct {
	now func() time.Time

	mu       sync.Mutex
	bySource map[string]*sourceResets
}

type sourceResets struct {
	budget      *rate.Limiter
	bannedUntil time.Time
}

func newResetBudgets(now func() time.Time) *resetBudgets {
	return &resetBudgets{now: now, bySource: map[string]*sourceResets{}}
}

// spend takes an early reset from src's budget. It reports whether the
// budget had one, and whether src is remembered at all: when every place
// is held by a source with spent budget or a ban, a new one is not, and
// its connections fall back on budgets of their own.
func (b *resetBudgets) spend(src string) (ok, remembered bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	s, found := b.bySource[src]
	if !found {
		if len(b.bySource) >= resetSources {
			b.forgetLocked(now)
		}
		if len(b.bySource) >= resetSources {
			return false, false
		}
		s = &sourceResets{budget: rate.NewLimiter(earlyResetRate, earlyResetBurst)}
		b.bySource[src] = s
	}
	return s.budget.AllowN(now, 1), true
}

// ban refuses src's new connections for resetBan from now.
func (b *resetBudgets) ban(src string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.bySource[src]; ok {
		s.bannedUntil = b.now().Add(resetBan)
	}
}

// banned reports whether src's new connections are refused now.
func (b *resetBudgets) banned(src string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.bySource[src]
	return ok && b.now().Before(s.bannedUntil)
}

// forgetLocked forgets the sources that are as good as new: budget whole,
// no ban.
func (b *resetBudgets) forgetLocked(now time.Time) {
	for src, s := range b.bySource {
		if !now.Before(s.bannedUntil) && s.budget.TokensAt(now) >= earlyResetBurst {
			delete(b.bySource, src)
		}
	}
}

type connKey struct{}

// connWatch is what the reset check knows of one connection: the
// listener's connection under it, when it is one of limitListener's
// counted by source, and otherwise a budget of its own.
type connWatch struct {
	conn    net.Conn
	limited *limitConn
	resets  *rate.Limiter
	once    sync.Once
}

// watchConn is http.Server.ConnContext: each connection gets its watch.
func watchConn(ctx context.Context, c net.Conn) context.Context {
	cw := &connWatch{conn: c, resets: rate.NewLimiter(earlyResetRate, earlyResetBurst)}
	if lc := limitConnOf(c); lc != nil && lc.src != "" {
		cw.limited = lc
	}
	return context.WithValue(ctx, connKey{}, cw)
}

// limitConnOf finds the limitConn under c (a TLS connection wraps it), or
// nil where the server was not served on a Limit listener.
func limitConnOf(c net.Conn) *limitConn {
	for {
		switch x := c.(type) {
		case *limitConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
}

// watchResets runs h, and, once an HTTP/2 request's client cancelled it
// early past its source's budget, closes the connection and its source's
// others, and refuses the source for resetBan; closed is told the
// client's address then.
func watchResets(h http.Handler, closed func(client string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		if r.ProtoMajor != 2 || r.Context().Err() == nil || time.Since(start) > earlyReset {
			return
		}
		cw, ok := r.Context().Value(connKey{}).(*connWatch)
		if !ok || cw.allow() {
			return
		}
		cw.once.Do(func() {
			_ = cw.conn.Close()
			closed(r.RemoteAddr)
			if lc := cw.limited; lc != nil {
				lc.l.banSource(lc.src, lc)
			}
		})
	})
}

// allow takes an early reset from the connection's source's budget, or
// from its own where its source is not remembered.
func (cw *connWatch) allow() bool {
	if lc := cw.limited; lc != nil {
		if ok, remembered := lc.l.resets.spend(lc.src); remembered {
			return ok
		}
	}
	return cw.resets.Allow()
}
