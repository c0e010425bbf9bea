package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/listen"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/server"
)

type fakeOperator struct {
	alive error
	ready atomic.Bool
	// checks counts the calls of Ready.
	checks atomic.Int64
	// slow, when set, holds each call of Ready until it is closed.
	slow chan struct{}
}

func (f *fakeOperator) Alive() error { return f.alive }
func (f *fakeOperator) Ready(context.Context) (bool, []string) {
	if f.slow != nil {
		<-f.slow
	}
	f.checks.Add(1)
	if f.ready.Load() {
		return true, nil
	}
	return false, []string{"binding x/y has not synchronized", "hook b\x1b[2J.sh waits"}
}
func (f *fakeOperator) Queues() []queue.QueueState { return []queue.QueueState{{Name: "main"}} }
func (f *fakeOperator) Hooks() []debugapi.HookState {
	return []debugapi.HookState{{Name: "a.sh"}}
}
func (f *fakeOperator) Role() debugapi.RoleState { return debugapi.RoleState{Role: "single"} }

func (f *fakeOperator) Snapshots(hook string) ([]debugapi.SnapshotState, error) {
	if hook != "a.sh" {
		return nil, errors.New("no hook")
	}
	return []debugapi.SnapshotState{{Binding: "b"}}, nil
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:9115" // the debug routes answer an IP address, not example.com
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// waitFor polls cond until it holds, failing t after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

func TestRoutes(t *testing.T) {
	op := &fakeOperator{}
	h := server.Handler(t.Context(), op, server.Options{ReadyInterval: 10 * time.Millisecond})
	waitFor(t, "/readyz to say why it is not ready", func() bool {
		code, body := get(t, h, "/readyz")
		return code == 503 && strings.Contains(body, "x/y has not synchronized")
	})
	// Names from the hooks folder are escaped: a reason is one line of text.
	if _, body := get(t, h, "/readyz"); strings.ContainsRune(body, 0x1b) || !strings.Contains(body, `hook b\x1b[2J.sh waits`) {
		t.Errorf("/readyz printed a control character of a hook's name raw: %q", body)
	}
	op.ready.Store(true)
	waitFor(t, "/readyz to answer 200 once ready", func() bool {
		code, _ := get(t, h, "/readyz")
		return code == 200
	})
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	op.alive = errors.New("stuck")
	if code, body := get(t, h, "/healthz"); code != 503 || !strings.Contains(body, "stuck") {
		t.Errorf("/healthz when stuck: %d %q", code, body)
	}
	if code, body := get(t, h, server.QueuesPath); code != 200 || !strings.Contains(body, `"name": "main"`) {
		t.Errorf("queues: %d %s", code, body)
	}
	if code, _ := get(t, h, server.SnapshotsPath); code != 400 {
		t.Errorf("snapshots without hook: %d", code)
	}
	if code, _ := get(t, h, server.SnapshotsPath+"?hook=zz"); code != 404 {
		t.Errorf("snapshots of an unknown hook: %d", code)
	}
	if code, _ := get(t, h, "/debug/pprof/"); code != 404 {
		t.Errorf("pprof served without Pprof: %d", code)
	}
}

// The TCP listener keeps the debug routes to itself unless asked; the
// socket serves them to the operator's user only.
func TestDebugOnSocketOnly(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	log := logrus.New()
	log.SetOutput(io.Discard)
	addrs, err := server.Start(t.Context(), &fakeOperator{}, server.Options{Address: "127.0.0.1:0", DebugSocket: sock, Pprof: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	addr := addrs.Listen
	resp, err := http.Get("http://" + addr + server.HooksPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("debug route on TCP: %d, want 404", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("pprof on TCP: %d, want 404", resp.StatusCode)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket %v (%v), want no access for group and others", fi, err)
	}
}

// /readyz answers from the state checked in the background: 500 requests
// cost a check per interval, not one each (each check asks the API server).
func TestReadyzAnswersFromTheCheckedState(t *testing.T) {
	op := &fakeOperator{}
	op.ready.Store(true)
	const interval = time.Hour
	h := server.Handler(t.Context(), op, server.Options{ReadyInterval: interval})
	waitFor(t, "the first check", func() bool { code, _ := get(t, h, "/readyz"); return code == 200 })
	for range 500 {
		if code, _ := get(t, h, "/readyz"); code != 200 {
			t.Fatalf("/readyz: %d", code)
		}
	}
	if n := op.checks.Load(); n != 1 {
		t.Errorf("500 requests to /readyz made %d readiness checks, want the 1 of the background loop (every %s)", n, interval)
	}
}

// Readiness is checked when asked, at most once per interval: an operator
// that nobody asks makes no check (each asks the API server), and a
// request after the interval gets a new one.
func TestReadyzChecksOnlyWhenAsked(t *testing.T) {
	op := &fakeOperator{}
	op.ready.Store(true)
	const interval = 50 * time.Millisecond
	h := server.Handler(t.Context(), op, server.Options{ReadyInterval: interval})
	time.Sleep(4 * interval)
	if n := op.checks.Load(); n != 0 {
		t.Errorf("%d readiness checks while nobody asked, want none", n)
	}
	if code, _ := get(t, h, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	time.Sleep(interval + 10*time.Millisecond)
	if code, _ := get(t, h, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}
	if n := op.checks.Load(); n != 2 {
		t.Errorf("two requests more than the interval apart made %d checks, want 2", n)
	}
}

// A request that comes before the first check is done (a busy machine, a
// slow API server) waits for it and gets what it found, not a state that
// nobody checked.
func TestReadyzWaitsForTheFirstCheck(t *testing.T) {
	op := &fakeOperator{slow: make(chan struct{})}
	h := server.Handler(t.Context(), op, server.Options{ReadyInterval: time.Hour})
	type answer struct {
		code int
		body string
	}
	got := make(chan answer, 1)
	go func() {
		code, body := get(t, h, "/readyz")
		got <- answer{code, body}
	}()
	select {
	case a := <-got:
		t.Fatalf("/readyz answered %d %q before readiness was checked", a.code, a.body)
	case <-time.After(100 * time.Millisecond):
	}
	close(op.slow)
	a := <-got
	if a.code != 503 || !strings.Contains(a.body, "binding x/y has not synchronized") {
		t.Errorf("/readyz: %d %q, want 503 with what the first check found", a.code, a.body)
	}
}

// Every listener has a cap on connections and timeouts: with a cap of one,
// a second client is answered only once the first connection closes, and
// an idle keep-alive connection is closed after the idle timeout.
func TestListenerIsBounded(t *testing.T) {
	op := &fakeOperator{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	addrs, err := server.Start(t.Context(), op, server.Options{Address: "127.0.0.1:0", MaxConns: 1}, log)
	if err != nil {
		t.Fatal(err)
	}
	addr := addrs.Listen
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// The first connection is accepted once it is answered.
	fmt.Fprintf(first, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	r1 := bufio.NewReader(first)
	if resp, err := http.ReadResponse(r1, nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	fmt.Fprintf(second, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	r2 := bufio.NewReader(second)
	if _, err := http.ReadResponse(r2, nil); err == nil {
		t.Fatal("a second connection was answered while the first (of a cap of 1) was open")
	}
	first.Close()
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(r2, nil); err != nil {
		t.Fatalf("the second connection once the first closed: %v", err)
	} else {
		resp.Body.Close()
	}
}

// The listeners' timeouts are all set, so that no slow or idle client
// holds a connection for long.
func TestDefaultLimitsSetEveryTimeout(t *testing.T) {
	srv := listen.Limits{}.Server(http.NotFoundHandler(), logrus.New(), nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.ErrorLog == nil {
		t.Errorf("timeouts %s %s %s %s, error log %v: want all set", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.ErrorLog)
	}
}

// A second operator on one host, started with the defaults of the probe
// port and the debug socket, both of which the first holds: it starts,
// warns for each, and serves its probes on its --listen-address; the
// first keeps its socket. Asked for explicitly, the same port and socket
// are errors that name the setting.
func TestDefaultsTakenByAnotherOperatorDoNotStopTheStart(t *testing.T) {
	ctx := t.Context()
	sock := filepath.Join(t.TempDir(), "debug.sock")
	first, err := server.Start(ctx, &fakeOperator{}, server.Options{HealthAddress: "127.0.0.1:0", DebugSocket: sock}, logrus.New())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	second, err := server.Start(ctx, &fakeOperator{}, server.Options{Address: "127.0.0.1:0", HealthAddress: first.Health, HealthOptional: true,
		DebugSocket: sock, DebugSocketOptional: true}, log)
	if err != nil {
		t.Fatalf("a second operator with the defaults taken: %v", err)
	}
	if second.Health != "" {
		t.Errorf("the second operator has a probe listener at %s, the first's port", second.Health)
	}
	for _, want := range []string{"the probe listener's default port is taken", "served on --listen-address " + second.Listen, "another process serves the default debug socket"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning with %q:\n%s", want, logs.String())
		}
	}
	resp, err := http.Get("http://" + second.Listen + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz of the second operator's --listen-address: %v %v", resp, err)
	}
	if err == nil {
		resp.Body.Close()
	}
	if c, err := net.Dial("unix", sock); err != nil {
		t.Errorf("the first operator's socket: %v", err)
	} else {
		c.Close()
	}
	for _, o := range []server.Options{{HealthAddress: first.Health}, {DebugSocket: sock}} {
		if _, err := server.Start(ctx, &fakeOperator{}, o, logrus.New()); err == nil {
			t.Errorf("%+v given explicitly and taken: started", o)
		} else if !strings.Contains(err.Error(), "--health-listen-address") && !strings.Contains(err.Error(), "--debug-socket") {
			t.Errorf("the error does not name the setting: %v", err)
		}
	}
}
