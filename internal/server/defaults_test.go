package server_test

import (
	"bytes"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/server"
)

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
