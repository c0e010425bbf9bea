package localcluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// Out of the range a listener on port 0 is given.
	if n, err := strconv.Atoi(port); err != nil || n < 10000 || n >= 30000 {
		t.Errorf("port %s; want one in 10000-29999, below the ephemeral ports", port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("port %s is not free: %v", port, err)
	}
	ln.Close()
}

// Config reads the kubeconfig and sets the harness's request rate; a
// kubeconfig it cannot read is an error that names it.
func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(path, 200, 400)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.QPS != 200 || cfg.Burst != 400 {
		t.Errorf("Config = host %s, qps %v, burst %d", cfg.Host, cfg.QPS, cfg.Burst)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := Config(missing, 1, 1); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Config of a missing kubeconfig: %v", err)
	}
}

func TestLastLines(t *testing.T) {
	for in, want := range map[string]string{"a\nb\nc\n": "b\nc", "a": "a", "": ""} {
		if got := lastLines(in, 2); got != want {
			t.Errorf("lastLines(%q, 2) = %q, want %q", in, got, want)
		}
	}
}

func TestKubeVersion(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hack", "cluster"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hack", "cluster", "versions.env"), []byte("# pins\nKUBE_VERSION=v1.36.3\nETCD_VERSION=v3.6.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvKubeVersion, "")
	if v, err := KubeVersion(root); err != nil || v != "v1.36.3" {
		t.Errorf("pinned: KubeVersion = %q, %v; want v1.36.3", v, err)
	}
	t.Setenv(EnvKubeVersion, "v1.31.13")
	if v, err := KubeVersion(root); err != nil || v != "v1.31.13" {
		t.Errorf("%s set: KubeVersion = %q, %v; want v1.31.13", EnvKubeVersion, v, err)
	}
}

// The ports lock is held by one holder at a time, across the processes
// (here: open files) of one user, and released by unlock.
func TestLockPortsExcludes(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // a lock of its own, not the one of the tests running beside it
	unlock, err := LockPorts()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		second, err := LockPorts()
		if err != nil {
			t.Error(err)
			second = func() {}
		}
		got <- second
	}()
	select {
	case second := <-got:
		second()
		t.Fatal("a second holder took the lock while the first held it")
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	unlock() // a second call does nothing
	select {
	case second := <-got:
		second()
	case <-time.After(10 * time.Second):
		t.Fatal("the second holder did not get the lock once the first released it")
	}
}
