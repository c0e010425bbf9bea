package listen

import (
	"net"
	"slices"
	"sync"
	"time"
)

// limitListener caps the connections open at once from one source (more
// are closed as soon as they are accepted) and all sources together. When
// every place is taken, a new connection takes the place of the oldest one
// of the source that holds the most, if that source holds more than the
// newcomer's would; otherwise it is closed at once, so that the sources
// with many connections, not those with few, give way: one pod, or a few,
// cannot keep the API server out, and no connection waits for a place
// ahead of one that could take one. Where a source may hold every place
// (perSource >= max: a listener for one client), a newcomer waits for a
// place instead, with the connections after it in the kernel's backlog.
// A source banned for rapid resets (see resets.go) has its connections
// closed as soon as they are accepted.
type limitListener struct {
	net.Listener
	max, perSource int
	refused        func(reason, client string)
	resets         *resetBudgets

	mu   sync.Mutex
	open int
	// bySource holds each source's open connections, oldest first.
	bySource map[string][]*limitConn
	// freed is closed, and replaced, when a place is given back.
	freed chan struct{}

	closeOnce sync.Once
	done      chan struct{}
}

func newLimitListener(ln net.Listener, l Limits) *limitListener {
	return &limitListener{Listener: ln, max: l.MaxConns, perSource: l.MaxConnsPerSource, refused: l.Refused,
		resets: newResetBudgets(time.Now), bySource: map[string][]*limitConn{}, freed: make(chan struct{}), done: make(chan struct{})}
}

// Accept returns the next connection that has a place (see limitListener),
// and closes those a source has too many of.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		for {
			lc, evicted, freed, reason := l.admit(c)
			if evicted != nil {
				_ = evicted.Conn.Close()
				l.tell(ReasonEvicted, evicted)
			}
			if lc != nil {
				return lc, nil
			}
			if reason != "" {
				_ = c.Close()
				l.tell(reason, c)
				break
			}
			select {
			case <-freed:
			case <-l.done:
				_ = c.Close()
				return nil, net.ErrClosed
			}
		}
	}
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// admit gives c a place, and returns the connection it takes the place
// of, if any; or returns why c is to be closed, or a channel closed when a
// place is given back (to wait for).
func (l *limitListener) admit(c net.Conn) (admitted, evicted *limitConn, freed chan struct{}, reason string) {
	src, counted := source(c.RemoteAddr())
	fairShare := l.perSource < l.max
	l.mu.Lock()
	defer l.mu.Unlock()
	mine := len(l.bySource[src])
	if counted && l.resets.banned(src) {
		return nil, nil, nil, ReasonResetFlood
	}
	if counted && fairShare && mine >= l.perSource {
		return nil, nil, nil, ReasonPerSource
	}
	if l.open >= l.max {
		heaviest := ""
		for s, conns := range l.bySource {
			if len(conns) > len(l.bySource[heaviest]) {
				heaviest = s
			}
		}
		switch {
		case len(l.bySource[heaviest]) > mine+1:
			evicted = l.bySource[heaviest][0]
			l.removeLocked(evicted)
		case fairShare:
			return nil, nil, nil, ReasonFull
		default:
			return nil, nil, l.freed, ""
		}
	}
	admitted = &limitConn{Conn: c, l: l, src: src}
	l.bySource[src] = append(l.bySource[src], admitted)
	l.open++
	return admitted, evicted, nil, ""
}

// banSource closes src's open connections but cut (closed already), and
// its next ones for resetBan (see resetBudgets).
func (l *limitListener) banSource(src string, cut *limitConn) {
	l.resets.ban(src)
	l.mu.Lock()
	conns := slices.Clone(l.bySource[src])
	l.mu.Unlock()
	for _, c := range conns {
		if c != cut {
			_ = c.Close()
			l.tell(ReasonResetFlood, c)
		}
	}
}

// removeLocked takes c out of its source's connections, if it is there.
func (l *limitListener) removeLocked(c *limitConn) {
	conns := l.bySource[c.src]
	for i, o := range conns {
		if o == c {
			conns = append(conns[:i:i], conns[i+1:]...)
			l.open--
			close(l.freed)
			l.freed = make(chan struct{})
			break
		}
	}
	if len(conns) == 0 {
		delete(l.bySource, c.src)
	} else {
		l.bySource[c.src] = conns
	}
}

func (l *limitListener) tell(reason string, c net.Conn) {
	if l.refused != nil {
		l.refused(reason, c.RemoteAddr().String())
	}
}

// source is the IP address a TCP connection comes from; other
// connections (a Unix socket's) are not counted by source, and share the
// source "".
func source(addr net.Addr) (string, bool) {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String(), true
	}
	return "", false
}

// limitConn gives its place back when it is closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	src  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.removeLocked(c)
		c.l.mu.Unlock()
	})
	return err
}
