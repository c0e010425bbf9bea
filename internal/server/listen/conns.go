package listen

import (
	"net"
	"sync"
)

// limitListener caps the connections open at once, all sources together
// (more wait in the kernel's backlog) and from one source (more are closed
// as soon as they are accepted, so that one client cannot fill the cap).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	perSource int
	refused   func(reason, client string)

	mu   sync.Mutex
	open map[string]int

	closeOnce sync.Once
	done      chan struct{}
}

func newLimitListener(ln net.Listener, l Limits) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, l.MaxConns), perSource: l.MaxConnsPerSource,
		refused: l.Refused, open: map[string]int{}, done: make(chan struct{})}
}

// Accept waits for a free slot, then returns the next connection whose
// source has fewer than perSource open; it closes the others at once.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		src, counted := source(c.RemoteAddr())
		if !counted {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.mu.Lock()
		full := l.open[src] >= l.perSource
		if !full {
			l.open[src]++
		}
		l.mu.Unlock()
		if !full {
			return &limitConn{Conn: c, l: l, src: src}, nil
		}
		_ = c.Close()
		<-l.slots
		if l.refused != nil {
			l.refused(ReasonPerSource, c.RemoteAddr().String())
		}
	}
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

func (l *limitListener) release(src string) {
	if src != "" {
		l.mu.Lock()
		if l.open[src]--; l.open[src] <= 0 {
			delete(l.open, src)
		}
		l.mu.Unlock()
	}
	<-l.slots
}

// source is the IP address a TCP connection comes from; other
// connections (a Unix socket's) are not counted by source.
func source(addr net.Addr) (string, bool) {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String(), true
	}
	return "", false
}

// limitConn gives its slots back when it is closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	src  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}
