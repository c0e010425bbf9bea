package webhook

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/listen"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

func jsonLog() (*logrus.Logger, *testoperator.Buffer) {
	out := &testoperator.Buffer{}
	log := logrus.New()
	log.SetOutput(out)
	log.SetFormatter(&logrus.JSONFormatter{})
	return log, out
}

// reasons counts what a server's Rejected was told.
type reasons struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *reasons) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[reason]++
}

func (r *reasons) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[reason]
}

// waitFor polls cond until it holds, failing t after 10s with what it
// waited for and show's account of why.
func waitFor(t *testing.T, what string, cond func() bool, show func() string) {
	t.Helper()
	poll.UntilShowing(t, 10*time.Second, what, cond, show)
}

// serveTest serves handler with a test certificate and o, and returns its
// address.
func serveTest(t *testing.T, handler http.Handler, o ServeOptions) string {
	t.Helper()
	dir := t.TempDir()
	writePair(t, dir, 1)
	if o.Log == nil {
		o.Log, _ = jsonLog()
	}
	certs, err := NewCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), o.Log)
	if err != nil {
		t.Fatal(err)
	}
	o.Certificate = certs.GetCertificate
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr, err := Serve(ctx, "127.0.0.1:0", handler, o)
	if err != nil {
		t.Fatal(err)
	}
	return addr.String()
}

func handshake(addr string, c *tls.Config) error {
	c.InsecureSkipVerify = true
	conn, err := tls.Dial("tcp", addr, c)
	if err != nil {
		return err
	}
	return conn.Close()
}

// TLS 1.2 is accepted with AEAD suites only, and not at all with TLS13Only.
func TestServeTLSSuites(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	addr := serveTest(t, ok, ServeOptions{})
	tls12 := func(suite uint16) *tls.Config {
		return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
	}
	for _, suite := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256} {
		if err := handshake(addr, tls12(suite)); err == nil {
			t.Errorf("TLS 1.2 with %s was accepted", tls.CipherSuiteName(suite))
		}
	}
	for _, suite := range []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256} {
		if err := handshake(addr, tls12(suite)); err != nil {
			t.Errorf("TLS 1.2 with %s: %v", tls.CipherSuiteName(suite), err)
		}
	}
	only13 := serveTest(t, ok, ServeOptions{TLS13Only: true})
	if err := handshake(only13, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
		t.Errorf("TLS 1.2 was accepted with TLS13Only")
	}
	if err := handshake(only13, &tls.Config{MinVersion: tls.VersionTLS13}); err != nil {
		t.Errorf("TLS 1.3 with TLS13Only: %v", err)
	}
}

func TestParseTLSMinVersion(t *testing.T) {
	for v, want := range map[string]bool{"1.2": false, "1.3": true, "VersionTLS13": true, "TLS12": false} {
		if got, err := ParseTLSMinVersion(v); err != nil || got != want {
			t.Errorf("%s: %v %v", v, got, err)
		}
	}
	if _, err := ParseTLSMinVersion("1.1"); err == nil || !strings.Contains(err.Error(), "use 1.2") {
		t.Errorf("1.1: %v", err)
	}
}

// bodyReader records whether the server read any of a request's body.
type bodyReader struct {
	mu   sync.Mutex
	read bool
	r    io.Reader
}

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	b.read = true
	b.mu.Unlock()
	return b.r.Read(p)
}

func (b *bodyReader) wasRead() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read
}

func testGate(slots *Slots, next http.Handler) (*gate, *reasons, *testoperator.Buffer) {
	log, logs := jsonLog()
	r := &reasons{}
	return &gate{next: next, slots: slots, bodies: NewBodies(defaultBodyBytes), bodyTimeout: time.Second, rejected: r.add, log: log, sampler: listen.NewSampler(10, time.Second)}, r, logs
}

func allow(context.Context, string, json.RawMessage) (*AdmissionResponse, error) {
	return &AdmissionResponse{Allowed: true}, nil
}

// A request whose body has not arrived holds no slot: while one request's
// body stalls, another takes the only slot and is answered; the stalled
// one is answered once its body arrives.
func TestGateReadsTheBodyBeforeTakingASlot(t *testing.T) {
	g, _, logs := testGate(NewSlots(1, 0), &AdmissionHandler{Run: allow})
	g.bodyTimeout = time.Minute
	stalled, send := io.Pipe()
	first := make(chan int)
	go func() {
		req := httptest.NewRequest(http.MethodPost, "/hooks/x", stalled)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		first <- rec.Code
	}()
	if _, err := io.WriteString(send, review[:20]); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/hooks/x?timeout=5s", strings.NewReader(review))
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("a request while another's body stalls: %d, want 200\n%s", rec.Code, logs.String())
	}
	_, _ = io.WriteString(send, review[20:])
	send.Close()
	if code := <-first; code != http.StatusOK {
		t.Errorf("the stalled request once its body arrived: %d, want 200\n%s", code, logs.String())
	}
}

// A request that waits for a slot past the API server's timeout is
// answered 503, logged and counted.
func TestGateAnswersBusyWhenNoSlotFrees(t *testing.T) {
	slots := NewSlots(1, 0)
	free := taken(t, slots, "198.51.100.1") // every slot taken
	g, rejected, logs := testGate(slots, &AdmissionHandler{Run: allow})
	req := httptest.NewRequest(http.MethodPost, "/hooks/x?timeout=200ms", strings.NewReader(review))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a request while every slot is taken: %d, want 503", rec.Code)
	}
	if rejected.count("busy") != 1 || !strings.Contains(logs.String(), `"reason":"busy"`) {
		t.Errorf("the busy answer: counted %d, logged:\n%s", rejected.count("busy"), logs.String())
	}
	free()
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(review)))
	if n, _ := slots.Held(); rec.Code != http.StatusOK || n != 0 {
		t.Errorf("a request with a free slot: %d, slots still taken %d", rec.Code, n)
	}
}

// GET and HEAD /healthz are answered 200 while every slot is taken, and
// reach no handler: a liveness probe never waits behind reviews.
func TestGateAnswersHealthWithoutASlot(t *testing.T) {
	slots := NewSlots(1, 0)
	taken(t, slots, "198.51.100.1") // every slot taken
	handled := false
	g, rejected, _ := testGate(slots, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(method, HealthPath, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s %s while every slot is taken: %d, want 200", method, HealthPath, rec.Code)
		}
	}
	if n, _ := slots.Held(); handled || n != 1 || rejected.count("busy") != 0 {
		t.Errorf("the probes reached the handler (%t) or took a slot (%d taken)", handled, n)
	}
}

// Bodies are charged for what has arrived, not for the length announced:
// requests that announce 1 MiB and send 100 bytes hold a few KiB each,
// and the others are still read. A body that needs more than is free
// waits, and is answered 503 when its time is up; every byte is given
// back once the requests are answered.
func TestGateChargesBodiesForWhatArrived(t *testing.T) {
	g, rejected, logs := testGate(NewSlots(4, 0), &AdmissionHandler{Run: allow})
	g.bodies = &Bodies{size: 64 << 10, sources: map[string]int64{}, changed: make(chan struct{})}
	g.bodyTimeout = 300 * time.Millisecond
	var stalls []*io.PipeWriter
	var read atomic.Int64
	done := make(chan int, 5)
	for range 5 {
		body, send := io.Pipe()
		stalls = append(stalls, send)
		req := httptest.NewRequest(http.MethodPost, "/hooks/x", &countingReader{r: body, n: &read})
		req.ContentLength = 1 << 20
		go func() {
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			done <- rec.Code
		}()
		// Not waited for: a gate that charged the announced length would
		// never read it.
		go func() { _, _ = io.WriteString(send, strings.Repeat(" ", 100)) }()
	}
	waitFor(t, "the 100 bytes of 5 requests to be read", func() bool { return read.Load() == 500 }, logs.String)
	held := func() int64 {
		g.bodies.mu.Lock()
		defer g.bodies.mu.Unlock()
		return g.bodies.held
	}
	if h := held(); h > 5*minBodyBuffer {
		t.Errorf("5 requests that sent 100 bytes each hold %d bytes", h)
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(review)))
	if rec.Code != http.StatusOK {
		t.Errorf("a review while 5 bodies stall: %d, want 200\n%s", rec.Code, logs.String())
	}
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(strings.Repeat(" ", 60<<10)+review)))
	if rec.Code != http.StatusServiceUnavailable || rejected.count("busy") != 1 {
		t.Errorf("a body larger than what is free: %d, counted %v; want 503 busy", rec.Code, rejected.n)
	}
	for _, s := range stalls {
		s.CloseWithError(errors.New("gone"))
	}
	for range stalls {
		<-done
	}
	if h := held(); h != 0 {
		t.Errorf("%d bytes still held once every request was answered", h)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Requests refused before a hook ran are logged with the client's address
// and the reason, and counted; a flood of them is sampled in the log but
// counted in full. A body larger than a review is refused before it is read.
func TestGateLogsAndCountsRejections(t *testing.T) {
	handler := &AdmissionHandler{Run: func(context.Context, string, json.RawMessage) (*AdmissionResponse, error) {
		t.Error("a hook ran for a refused request")
		return nil, nil
	}}
	g, rejected, logs := testGate(NewSlots(4, 0), handler)
	serve := func(method, ct string, body io.Reader, length int64) int {
		req := httptest.NewRequest(method, "/hooks/x", body)
		req.RemoteAddr = "192.0.2.9:4711"
		req.Header.Set("Content-Type", ct)
		if length > 0 {
			req.ContentLength = length
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec.Code
	}
	for range 200 {
		serve(http.MethodGet, "application/json", nil, 0)
	}
	read := &bodyReader{r: strings.NewReader("{}")}
	cases := []struct {
		code   int
		reason string
		got    int
	}{
		{http.StatusUnsupportedMediaType, "content_type", serve(http.MethodPost, "text/plain", strings.NewReader("{}"), 0)},
		{http.StatusBadRequest, "bad_review", serve(http.MethodPost, "application/json", strings.NewReader("{"), 0)},
		{http.StatusRequestEntityTooLarge, "too_large", serve(http.MethodPost, "application/json", read, maxReviewBytes+1)},
		{http.StatusRequestEntityTooLarge, "too_large", serve(http.MethodPost, "application/json", strings.NewReader(strings.Repeat(" ", maxReviewBytes+1)), -1)},
	}
	for _, c := range cases {
		if c.got != c.code {
			t.Errorf("%s: answered %d, want %d", c.reason, c.got, c.code)
		}
	}
	if read.wasRead() {
		t.Errorf("a body announced larger than a review was read")
	}
	if rejected.count("method") != 200 || rejected.count("content_type") != 1 || rejected.count("bad_review") != 1 || rejected.count("too_large") != 2 {
		t.Errorf("counted: %v", rejected.n)
	}
	lines := strings.Count(logs.String(), "\n")
	if lines > 20 {
		t.Errorf("204 rejected requests made %d log lines; want them sampled", lines)
	}
	if !strings.Contains(logs.String(), `"client":"192.0.2.9:4711"`) || !strings.Contains(logs.String(), `"reason":"method"`) ||
		!strings.Contains(logs.String(), `"msg":"webhook request rejected"`) {
		t.Errorf("the log of rejected requests:\n%s", logs.String())
	}
}

// A request to a path no binding serves is answered 404 before its body
// is read, counted as not_found, and logged sampled with its path cut and
// escaped: 3,000 of them with paths of 2 KB holding escape sequences and
// newlines make 10 short lines of log, not 3,000 long ones.
func TestGateAnswersUnknownPathsNotFound(t *testing.T) {
	handled := false
	g, rejected, logs := testGate(NewSlots(4, 0), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
	g.served = func(path string) bool { return path == "/hooks/known" }
	path := "/hooks/nope-\x1b[2J\r\nforged-" + strings.Repeat("a", 2048)
	for range 3000 {
		body := &bodyReader{r: strings.NewReader(review)}
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || body.wasRead() {
			t.Fatalf("a request to an unknown path: %d (body read: %t), want 404 unread", rec.Code, body.wasRead())
		}
	}
	if handled {
		t.Error("a request to an unknown path reached the handler")
	}
	if n := rejected.count("not_found"); n != 3000 {
		t.Errorf("counted %d not_found, want 3000", n)
	}
	log := logs.String()
	if lines := strings.Count(log, "\n"); lines != 10 || len(log) > 10*1024 {
		t.Errorf("3,000 unknown paths logged %d lines, %d bytes; want the 10 of a burst, short:\n%.2000s", lines, len(log), log)
	}
	if strings.Contains(log, "\x1b") || strings.Contains(log, `\r\nforged`) || !strings.Contains(log, `nope-\\x1b[2J\\r\\nforged-aaa`) {
		t.Errorf("the path is not escaped in the log:\n%.600s", log)
	}
}

// A body that arrives too slowly is given up once its slot's body timeout
// passes, and the request is answered 408 and counted.
func TestServeEndsASlowBody(t *testing.T) {
	rejected := &reasons{}
	handler := &AdmissionHandler{Run: func(context.Context, string, json.RawMessage) (*AdmissionResponse, error) {
		return &AdmissionResponse{Allowed: true}, nil
	}}
	addr := serveTest(t, handler, ServeOptions{BodyTimeout: 200 * time.Millisecond, Rejected: rejected.add})
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\":")
	// The server's own limits would wait 35 s; the client waits less.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body that stopped coming: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || rejected.count("read_timeout") != 1 {
		t.Errorf("a slow body: %d, counted %v; want 408 and read_timeout", resp.StatusCode, rejected.n)
	}
}

// A connection that never starts its TLS handshake is closed within a few
// seconds (3s; it was 10s), and one more than a source may open is closed
// at once, counted and logged.
func TestServeClosesIdleAndExcessConnections(t *testing.T) {
	rejected := &reasons{}
	log, logs := jsonLog()
	addr := serveTest(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ServeOptions{MaxConns: 64, Rejected: rejected.add, Log: log})
	start := time.Now()
	var idle []net.Conn
	for range 17 { // a quarter of 64, and one more
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	waitFor(t, "the 17th connection to be closed and counted", func() bool { return rejected.count("per_source") == 1 }, logs.String)
	if !strings.Contains(logs.String(), `"msg":"webhook connection closed"`) || !strings.Contains(logs.String(), `"reason":"per_source"`) {
		t.Errorf("the log of a connection closed:\n%s", logs.String())
	}
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, _ = c.Read(make([]byte, 1))
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("idle connections were closed after %s; want the 3s handshake deadline", took.Round(time.Millisecond))
	}
}
