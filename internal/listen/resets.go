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
// bound it. A connection whose streams end this way faster than
// earlyResetRate, after a burst of earlyResetBurst, is closed.
const (
	// earlyReset is how soon after its handler started a stream must be
	// cancelled by the client to count: the API server gives a webhook at
	// least a second before it gives up, so its own cancellations do not
	// count.
	earlyReset      = 500 * time.Millisecond
	earlyResetBurst = 100
	earlyResetRate  = 10 // a second
)

type connKey struct{}

// connWatch counts one connection's early resets.
type connWatch struct {
	conn   net.Conn
	resets *rate.Limiter
	once   sync.Once
}

// watchConn is http.Server.ConnContext: each connection gets its counter.
func watchConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connWatch{conn: c, resets: rate.NewLimiter(earlyResetRate, earlyResetBurst)})
}

// watchResets runs h, and closes the connection of an HTTP/2 request that
// its client cancelled early once the connection has had too many; closed
// is told the client's address then.
func watchResets(h http.Handler, closed func(client string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		if r.ProtoMajor != 2 || r.Context().Err() == nil || time.Since(start) > earlyReset {
			return
		}
		cw, ok := r.Context().Value(connKey{}).(*connWatch)
		if !ok || cw.resets.Allow() {
			return
		}
		cw.once.Do(func() {
			_ = cw.conn.Close()
			closed(r.RemoteAddr)
		})
	})
}
