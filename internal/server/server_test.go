package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/server"
)

type fakeOperator struct {
	alive error
	ready bool
}

func (f *fakeOperator) Alive() error { return f.alive }
func (f *fakeOperator) Ready(context.Context) (bool, []string) {
	if f.ready {
		return true, nil
	}
	return false, []string{"binding x/y has not synchronized"}
}
func (f *fakeOperator) Queues() []queue.QueueState { return []queue.QueueState{{Name: "main"}} }
func (f *fakeOperator) Hooks() []operator.HookState {
	return []operator.HookState{{Name: "a.sh"}}
}
func (f *fakeOperator) Role() operator.RoleState { return operator.RoleState{Role: "single"} }

func (f *fakeOperator) Snapshots(hook string) ([]operator.SnapshotState, error) {
	if hook != "a.sh" {
		return nil, errors.New("no hook")
	}
	return []operator.SnapshotState{{Binding: "b"}}, nil
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestRoutes(t *testing.T) {
	op := &fakeOperator{}
	h := server.Handler(op, server.Options{})
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "x/y has not synchronized") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	op.ready = true
	if code, _ := get(t, h, "/readyz"); code != 200 {
		t.Errorf("/readyz when ready: %d", code)
	}
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	addr, err := server.Start(ctx, &fakeOperator{ready: true}, server.Options{Address: "127.0.0.1:0", DebugSocket: sock, Pprof: true}, log)
	if err != nil {
		t.Fatal(err)
	}
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
