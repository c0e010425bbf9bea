package listen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// refusals records what Limits.Refused was told.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) add(reason, client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reason+" "+client)
}

// wait reports whether Refused is told what starts with prefix within 5s.
func (r *refusals) wait(prefix string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.String(), prefix) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (r *refusals) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, "\n")
}

func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closed c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errorsAs(err, &ne) && ne.Timeout())
}

func errorsAs(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

// One source gets MaxConnsPerSource connections; more from it are closed
// at once (not left waiting in the backlog), and told to Refused, while
// another source is still served; a connection closed gives its place
// back.
func TestLimitCapsConnectionsPerSource(t *testing.T) {
	addr, accepted, refused := acceptLimited(t, Limits{MaxConns: 100, MaxConnsPerSource: 2})
	next := func(what string) net.Conn { t.Helper(); return next(t, accepted, what) }
	dialFrom(t, "127.0.0.2", addr)
	first := next("the first connection")
	dialFrom(t, "127.0.0.2", addr)
	next("the second connection")
	third := dialFrom(t, "127.0.0.2", addr)
	if !closedWithin(third, 5*time.Second) {
		t.Fatalf("a third connection from one source was not closed")
	}
	if !refused.wait("per_source 127.0.0.2:") {
		t.Errorf("told to Refused: %q", refused.String())
	}
	dialFrom(t, "127.0.0.3", addr)
	next("a connection from another source")
	first.Close()
	dialFrom(t, "127.0.0.2", addr)
	next("a connection in the place of one closed")
}

// next returns the next connection accepted, or fails the test.
func next(t *testing.T, accepted chan net.Conn, what string) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		return c
	case <-time.After(5 * time.Second):
		t.Fatalf("%s was not accepted", what)
		return nil
	}
}

// acceptLimited listens on a new port with l, its Refused told to the
// refusals it returns, and accepts its connections into a channel until
// the test ends; it returns the address and the channel too.
func acceptLimited(t *testing.T, l Limits) (addr string, accepted chan net.Conn, refused *refusals) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused = &refusals{}
	l.Refused = refused.add
	limited := l.Limit(ln)
	t.Cleanup(func() { limited.Close() })
	accepted = make(chan net.Conn, 100)
	go func() {
		for {
			c, err := limited.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return ln.Addr().String(), accepted, refused
}

// When every place is taken, a newcomer takes the place of the oldest
// connection of the source with the most; when the sources have as few as
// the newcomer would, the newcomer is closed at once, and the connections
// after it are still accepted.
func TestLimitMakesTheSourcesWithTheMostGiveWay(t *testing.T) {
	addr, accepted, refused := acceptLimited(t, Limits{MaxConns: 3, MaxConnsPerSource: 2})
	var heavy, served []net.Conn
	for range 2 {
		heavy = append(heavy, dialFrom(t, "127.0.0.2", addr))
		served = append(served, next(t, accepted, "a connection while there is room"))
	}
	dialFrom(t, "127.0.0.3", addr)
	next(t, accepted, "the last connection there is room for")
	dialFrom(t, "127.0.0.4", addr)
	next(t, accepted, "a newcomer while the cap is full")
	if !closedWithin(heavy[0], 5*time.Second) || !refused.wait("evicted 127.0.0.2:") {
		t.Fatalf("the oldest connection of the source with the most was not closed for a newcomer; told %q", refused)
	}
	last := dialFrom(t, "127.0.0.5", addr)
	if !closedWithin(last, 5*time.Second) || !refused.wait("full 127.0.0.5:") {
		t.Fatalf("a newcomer while each source has one connection was not closed; told %q", refused)
	}
	if closedWithin(heavy[1], 100*time.Millisecond) {
		t.Errorf("a source's last connection was closed")
	}
	served[1].Close()
	dialFrom(t, "127.0.0.5", addr)
	next(t, accepted, "a newcomer once a place was given back")
}

// Where a source may hold every place (a listener for one client), a
// newcomer waits for one instead.
func TestLimitForOneClientWaits(t *testing.T) {
	addr, accepted, _ := acceptLimited(t, Limits{MaxConns: 1})
	dialFrom(t, "127.0.0.2", addr)
	first := next(t, accepted, "the first connection")
	second := dialFrom(t, "127.0.0.2", addr)
	if closedWithin(second, 200*time.Millisecond) {
		t.Fatal("a second connection to a listener for one was closed")
	}
	first.Close()
	next(t, accepted, "the second connection once the first closed")
}

// testServer serves h with l on a new port, HTTP/1 and HTTP/2 without TLS
// (what the limits do is the same with TLS), and returns its address.
func testServer(t *testing.T, l Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	srv := l.Server(h, log, nil)
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l.Limit(ln)) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// A header larger than MaxHeaderBytes (16 KiB by default, not net/http's
// 1 MiB) is refused with 431.
func TestServerRefusesALargeHeader(t *testing.T) {
	addr := testServer(t, Limits{}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 64<<10))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header: %d, want 431", resp.StatusCode)
	}
}

// h2conn is a client's HTTP/2 connection at the frame level.
type h2conn struct {
	net.Conn
	fr *http2.Framer
}

// dialH2From opens an HTTP/2 connection without TLS from ip.
func dialH2From(t *testing.T, ip, addr string) *h2conn {
	t.Helper()
	c := dialFrom(t, ip, addr)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return &h2conn{Conn: c, fr: fr}
}

// headers is the HPACK block of a POST to /.
func headers() []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}, {"content-type", "application/json"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return buf.Bytes()
}

// The server tells an HTTP/2 client its limits in its first SETTINGS: few
// streams at once, small receive buffers and frames, the header limit.
func TestServerHTTP2Settings(t *testing.T) {
	addr := testServer(t, Limits{}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	c := dialH2From(t, "127.0.0.1", addr)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := c.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	settings, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("the first frame is a %T", f)
	}
	want := map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: 16, http2.SettingInitialWindowSize: 32 << 10, http2.SettingMaxFrameSize: 16 << 10,
	}
	for id, v := range want {
		if got, ok := settings.Value(id); !ok || got != v {
			t.Errorf("%s: %d (sent: %v), want %d", id, got, ok, v)
		}
	}
	if got, _ := settings.Value(http2.SettingMaxHeaderListSize); got > 32<<10 {
		t.Errorf("%s: %d, want about 16 KiB", http2.SettingMaxHeaderListSize, got)
	}
}

// A client that opens HTTP/2 streams and cancels them at once has its
// connection cut long before its flood ends. With the default limits, Go's
// own check (too many handlers waiting to start) may cut it first with a
// GOAWAY; with streams to spare, where that check does not fire, the
// count of early resets closes the connection and tells Refused.
func TestServerCutsARapidResetFlood(t *testing.T) {
	t.Run("default limits", func(t *testing.T) {
		sent, handled, _ := resetFlood(t, Limits{})
		if sent == floodStreams || handled > floodStreams/5 {
			t.Errorf("%d of %d streams sent, %d handled before the connection was cut", sent, floodStreams, handled)
		}
	})
	t.Run("streams to spare", func(t *testing.T) {
		sent, handled, refused := resetFlood(t, Limits{MaxStreams: 1000})
		if sent == floodStreams || handled > floodStreams/5 {
			t.Errorf("%d of %d streams sent, %d handled before the connection was cut", sent, floodStreams, handled)
		}
		if !refused.wait("reset_flood 127.0.0.1:") {
			t.Errorf("told to Refused: %q", refused)
		}
	})
}

const floodStreams = 50000

// resetFlood serves l and floods it from one connection (rapidReset); it
// returns how many streams were sent and handled, and what Refused was
// told.
func resetFlood(t *testing.T, l Limits) (sent, handled int, refused *refusals) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	refused = &refusals{}
	l.Refused = refused.add
	addr := testServer(t, l, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body) // ends when the stream is cancelled
	}))
	sent = rapidReset(t, dialH2From(t, "127.0.0.1", addr))
	mu.Lock()
	defer mu.Unlock()
	return sent, n, refused
}

// rapidReset opens and at once cancels floodStreams HTTP/2 streams on c,
// or fewer when the server cuts it, and waits for the server to cut it;
// it returns how many it sent.
func rapidReset(t *testing.T, c *h2conn) (sent int) {
	t.Helper()
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		for {
			if f, err := c.fr.ReadFrame(); err != nil {
				return
			} else if _, ok := f.(*http2.GoAwayFrame); ok {
				return
			}
		}
	}()
	block := headers()
flood:
	for i := range floodStreams {
		select {
		case <-cut:
			break flood
		default:
		}
		id := uint32(2*i + 1)
		err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
		if err == nil {
			err = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			break
		}
		sent++
	}
	select {
	case <-cut:
	case <-time.After(10 * time.Second):
		t.Fatalf("the connection is still open after %d streams opened and cancelled", sent)
	}
	return sent
}
