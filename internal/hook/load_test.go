package hook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/poll"
)

// script writes an executable bash hook at dir/name.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\nset -euo pipefail\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	// A YAML hook that refuses to print its configuration unless asked
	// with --config.
	script(t, dir, "pods/on-pod.sh", `
if [[ "${1:-}" != "--config" ]]; then echo "expected --config, got: $*" >&2; exit 1; fi
cat <<'YAML'
configVersion: v1
kubernetes:
- name: pods
  kind: Pod
  jqFilter: .metadata.labels
YAML
`)
	// A JSON hook whose configuration is a file next to it: that only works
	// when it runs from its own folder.
	script(t, dir, "nodes/on-node.sh", `cat ./config.json`)
	if err := os.WriteFile(filepath.Join(dir, "nodes", "config.json"), []byte(`{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * *"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hook that takes its order from the environment Load passes.
	script(t, dir, "a-startup.sh", `printf '{"configVersion": "v1", "onStartup": %s}\n' "$STARTUP_ORDER"`)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a hook"), 0o644); err != nil {
		t.Fatal(err)
	}

	var warnings []string
	hooks, err := Load(context.Background(), dir, LoadOptions{
		Env:  append(os.Environ(), "STARTUP_ORDER=7"),
		Warn: func(msg string) { warnings = append(warnings, msg) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hooks {
		names = append(names, h.Name)
		if !filepath.IsAbs(h.Path) || h.Dir != filepath.Dir(h.Path) || h.Path != filepath.Join(dir, filepath.FromSlash(h.Name)) {
			t.Errorf("hook %s: path %q, dir %q", h.Name, h.Path, h.Dir)
		}
	}
	if want := "a-startup.sh nodes/on-node.sh pods/on-pod.sh"; strings.Join(names, " ") != want {
		t.Fatalf("hooks %q, want %q", names, want)
	}
	if o := hooks[0].Config.OnStartup; o == nil || *o != 7 {
		t.Errorf("onStartup = %v, want 7 from the environment", o)
	}
	if s := hooks[1].Config.Schedule; len(s) != 1 || s[0].Name != "tick" {
		t.Errorf("schedule = %+v", s)
	}
	if k := hooks[2].Config.Kubernetes; len(k) != 1 || k[0].Name != "pods" || k[0].Filter == nil {
		t.Errorf("kubernetes = %+v", k)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "nodes/config.json") || !strings.Contains(warnings[1], "notes.txt") {
		t.Errorf("warnings = %q, want one for nodes/config.json and one for notes.txt", warnings)
	}
}

func TestLoadReportsEveryHook(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "good.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	script(t, dir, "typo.sh", `echo '{"configVersion":"v1","kubernetes":[{"kind":"Pod","jqfilter":".a"}],"shedule":[]}'`)
	script(t, dir, "fails.sh", `
echo "some progress on stdout"
for i in $(seq 1 400); do echo "noise line $i" >&2; done
echo "kubectl: command not found" >&2
exit 3
`)
	script(t, dir, "v0.sh", `echo '{"onStartup": 1, "onKubernetesEvent": [{"kind": "Pod"}]}'`)
	if err := os.WriteFile(filepath.Join(dir, "noshebang.sh"), []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	hooks, err := Load(context.Background(), dir, LoadOptions{})
	if hooks != nil {
		t.Errorf("got hooks %v with an error; want none", hooks)
	}
	var errs ConfigErrors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T %v, want ConfigErrors", err, err)
	}
	msg := err.Error()
	for _, want := range []string{
		"hook fails.sh: --config failed (exit status 3)",
		"kubectl: command not found",
		"print the configuration and exit 0",
		"hook noshebang.sh: cannot be run",
		"exec format error; start the file with a #! line",
		`hook typo.sh: kubernetes[0].jqfilter: unknown key; did you mean "jqFilter"?`,
		`hook typo.sh: shedule: unknown key; did you mean "schedule"?`,
		"hook v0.sh: configVersion: missing; add configVersion: v1",
		"hook v0.sh: onKubernetesEvent: is configVersion v0 syntax",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	if len(errs) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(errs), msg)
	}
	if strings.Contains(msg, "noise line 1\n") || len(msg) > 8000 {
		t.Errorf("stderr is not cut to its tail (%d bytes):\n%s", len(msg), msg)
	}
}

// TestLoadTimeout runs a --config that hangs with a child of its own: both
// must be killed at the timeout.
func TestLoadTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	script(t, dir, "hang.sh", `
sleep 300 &
echo $! > `+pidFile+`
echo "waiting for the API server" >&2
wait
`)
	start := time.Now()
	_, err := Load(context.Background(), dir, LoadOptions{ConfigTimeout: 500 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "hook hang.sh: --config did not finish within 500ms") ||
		!strings.Contains(err.Error(), "waiting for the API server") {
		t.Fatalf("error = %v; want a timeout naming the hook, with its stderr", err)
	}
	if elapsed > 10*time.Second {
		t.Errorf("Load took %s after a 500ms timeout", elapsed)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	poll.Until(t, 5*time.Second, "the hook's child "+strconv.Itoa(pid)+" to end with the timeout", func() bool { return !alive(pid) })
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestLoadRunsConcurrentlyWithABound(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		script(t, dir, n+".sh", `sleep 1; echo '{"configVersion":"v1","onStartup":1}'`)
	}
	measure := func(parallelism int) time.Duration {
		start := time.Now()
		hooks, err := Load(context.Background(), dir, LoadOptions{Parallelism: parallelism})
		if err != nil || len(hooks) != 4 {
			t.Fatalf("Load: %d hooks, %v", len(hooks), err)
		}
		return time.Since(start)
	}
	if d := measure(4); d > 3*time.Second {
		t.Errorf("4 hooks sleeping 1s with parallelism 4 took %s; --config runs are not concurrent", d)
	}
	if d := measure(2); d < 2*time.Second {
		t.Errorf("4 hooks sleeping 1s with parallelism 2 took %s; the bound is not kept", d)
	}
}

func TestLoadCancelled(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "slow.sh", `sleep 300`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := Load(ctx, dir, LoadOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Load took %s after cancel", d)
	}
}

func TestLoadBadDir(t *testing.T) {
	_, err := Load(context.Background(), filepath.Join(t.TempDir(), "nope"), LoadOptions{})
	var errs ConfigErrors
	if err == nil || errors.As(err, &errs) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("error = %v, want a plain error saying the folder does not exist", err)
	}
}
