package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/listen"
	"github.com/hook-operator/hook-operator/internal/queue"
)

type aliveOperator struct{}

func (aliveOperator) Alive() error                                       { return nil }
func (aliveOperator) Ready(context.Context) (bool, []string)             { return true, nil }
func (aliveOperator) Queues() []queue.QueueState                         { return nil }
func (aliveOperator) Hooks() []debugapi.HookState                        { return nil }
func (aliveOperator) Snapshots(string) ([]debugapi.SnapshotState, error) { return nil, nil }
func (aliveOperator) Role() debugapi.RoleState                           { return debugapi.RoleState{} }

func quietLog() logrus.FieldLogger {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return log
}

// probe sends GET path from the loopback address src and returns the
// status, or 0 and the error.
func probe(src, addr, path string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext,
		DisableKeepAlives: true,
	}}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// dialFrom connects to addr from the loopback address src (any of
// 127.0.0.0/8 on Linux), standing for a client of its own.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedAtOnce dials addr from src and says whether the server closed
// the connection at once (the dial or a read fails with EOF or a reset)
// rather than holding it (the read times out).
func closedAtOnce(t *testing.T, src, addr string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return errors.Is(err, syscall.ECONNRESET)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// holdIdle opens n connections from src to addr and holds them open,
// sending nothing, until the test ends; connections the server refuses
// are let go.
func holdIdle(t *testing.T, src, addr string, n int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	for range n {
		if c, err := d.Dial("tcp", addr); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
}

// The probe listener serves /healthz and /readyz and nothing else, even
// with the debug routes over HTTP, and refuses a body or large headers.
func TestHealthListenerServesOnlyTheProbes(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })
	addrs, err := Start(t.Context(), aliveOperator{}, Options{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", DebugOverHTTP: true, Metrics: metrics}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, HooksPath: 404} {
		if code, err := probe("127.0.0.1", addrs.Health, path); code != want {
			t.Errorf("probe listener %s: %d %v, want %d", path, code, err, want)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200, HooksPath: 200} {
		if code, err := probe("127.0.0.1", addrs.Listen, path); code != want {
			t.Errorf("--listen-address %s: %d %v, want %d (the probes stay there too)", path, code, err, want)
		}
	}
	raw := func(req string) string {
		t.Helper()
		c, err := net.Dial("tcp", addrs.Health)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			return err.Error()
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err.Error()
		}
		return line
	}
	if got := raw("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"); !strings.Contains(got, " 413 ") {
		t.Errorf("a probe with a body: %q, want 413", got)
	}
	big := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if got := raw(big); !strings.Contains(got, " 431 ") {
		t.Errorf("a probe with 16 KiB of headers: %q, want 431", got)
	}
}

// A client holding idle sockets open on the probe listener cannot keep a
// probe from another address from being answered: its connections over 8
// are closed at once rather than queued, even when idle connections are
// held much longer than the probes wait (here a header timeout of a
// minute). Nor does a full metrics listener delay the probes.
func TestHealthListenerAnswersPastIdleConnections(t *testing.T) {
	ctx := t.Context()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slow := healthLimits
	slow.ReadHeader, slow.Read = time.Minute, time.Minute
	ready := newReadiness(ctx, aliveOperator{}, 0)
	serve(ctx, ln, healthHandler(aliveOperator{}, ready), slow, quietLog())
	addr := ln.Addr().String()
	holdIdle(t, "127.0.0.1", addr, 300)
	if !closedAtOnce(t, "127.0.0.1", addr) {
		t.Errorf("a connection of 127.0.0.1 over its %d idle ones was held", healthLimits.MaxConnsPerSource)
	}
	for i := range 5 {
		if code, err := probe("127.0.0.2", addr, "/healthz"); code != 200 {
			t.Fatalf("probe %d from 127.0.0.2 past 300 idle connections of 127.0.0.1: %d %v", i, code, err)
		}
	}
}

// While --listen-address holds as many idle connections as its cap, and
// more wait, the probe listener answers.
func TestHealthListenerIsApartFromTheMetricsListener(t *testing.T) {
	addrs, err := Start(t.Context(), aliveOperator{}, Options{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", MaxConns: 4}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	holdIdle(t, "127.0.0.1", addrs.Listen, 50)
	if code, err := probe("127.0.0.1", addrs.Health, "/healthz"); code != 200 {
		t.Errorf("probe listener past a full metrics listener: %d %v", code, err)
	}
}

// A connection the listener closes by itself (here one over the per-source
// cap) is logged with its reason and client.
func TestRefusedConnectionIsLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	l := healthLimits
	l.MaxConnsPerSource = 1
	serve(t.Context(), ln, http.NotFoundHandler(), l, log)
	holdIdle(t, "127.0.0.1", ln.Addr().String(), 1)
	if !closedAtOnce(t, "127.0.0.1", ln.Addr().String()) {
		t.Fatal("a second connection of 127.0.0.1 was held (a cap of 1 per source)")
	}
	// The listener closes the connection, then tells: the entry may
	// come just after the client saw the close.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range hook.AllEntries() {
			if client, _ := e.Data["client"].(string); e.Message == "connection closed" && e.Data["reason"] == listen.ReasonPerSource && strings.HasPrefix(client, "127.0.0.1:") {
				return
			}
		}
	}
	t.Errorf("no \"connection closed\" entry with reason %s and the client: %v", listen.ReasonPerSource, hook.AllEntries())
}
