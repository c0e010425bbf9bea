package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// buildBinary compiles hook-operator into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hook-operator")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func writeHook(t *testing.T, dir, name, script string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SIGTERM: no new work, the running hook finishes, exit code 0.
func TestIntegrationStartStopsGracefully(t *testing.T) {
	c := testcluster.Get(t)
	bin := buildBinary(t)
	hooks, marks := t.TempDir(), t.TempDir()
	writeHook(t, hooks, "slow-start.sh", `#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
touch `+marks+`/started
sleep 2
touch `+marks+`/finished
`)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "start", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig, "--log-format", "json")
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marks, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the onStartup hook never started:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", err, stderr.String())
		}
	case <-time.After(40 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("did not exit within 40s of SIGTERM:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(marks, "finished")); err != nil {
		t.Errorf("the running hook was not allowed to finish: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "no new work") {
		t.Errorf("the log does not say that shutdown began:\n%s", stderr.String())
	}
}

// Invalid configurations stop start-up with every error, before any
// cluster connection.
func TestStartRefusesInvalidHooks(t *testing.T) {
	bin := buildBinary(t)
	hooks := t.TempDir()
	writeHook(t, hooks, "a.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v1","kubernetes":[{"kind":"Pod","jqFilter":".a |"}]}'
`)
	writeHook(t, hooks, "b.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v2"}'
`)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "start", "--hooks-dir", hooks, "--kubeconfig", "/nonexistent")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatal("start succeeded with invalid hooks")
	}
	out := stderr.String()
	for _, want := range []string{"a.sh", "kubernetes[0].jqFilter", "b.sh", "configVersion"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nonexistent") {
		t.Errorf("start reached the cluster connection before refusing the hooks:\n%s", out)
	}
}
