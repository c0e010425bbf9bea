package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// buildBinary returns hook-operator compiled from this tree: built once
// for the test binary (into binDir, which TestMain removes at the end),
// then shared by every test, which only runs it.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		bin := filepath.Join(binDir, "hook-operator")
		out, err := gobuild.Command("", "-o", bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	once sync.Once
	bin  string
	err  error
}

func writeHook(t *testing.T, dir, name, script string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
}

// bashHook is the text of a bash hook that prints config (JSON with no
// single quote) for --config and runs body otherwise.
func bashHook(config, body string) string {
	return "#!/usr/bin/env bash\nif [[ \"${1:-}\" == \"--config\" ]]; then\n  echo '" + config + "'\n  exit 0\nfi\n" + body
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// SIGTERM: no new work, the running hook finishes, exit code 0.
func TestIntegrationStartStopsGracefully(t *testing.T) {
	t.Parallel()
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
	cmd := exec.Command(bin, "start", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig, "--log-format", "json",
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0")
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
	t.Parallel()
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

// finalizers release frees objects held by a hook's finalizer once the hook
// is gone; --dry-run only reports them.
func TestIntegrationFinalizersRelease(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	bin := buildBinary(t)
	gvr := c.InstallCRD(t, testcluster.CRD{Kind: "Held"})
	hooks := t.TempDir()
	writeHook(t, hooks, "held.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v1","kubernetes":[{"apiVersion":"`+gvr.Group+`/v1","kind":"Held","finalizer":"test.hook-operator.dev/keep"}]}'
`)
	ctx := context.Background()
	objs := c.Dynamic.Resource(gvr).Namespace(ns)
	for _, name := range []string{"one", "two"} {
		_, err := objs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.Group + "/v1", "kind": "Held",
			"metadata": map[string]any{"name": name, "finalizers": []any{"test.hook-operator.dev/keep", "other.example.com/keep"}},
		}}, metav1.CreateOptions{})
		must(t, err)
	}
	must(t, objs.Delete(ctx, "one", metav1.DeleteOptions{}))

	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"finalizers", "release", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("finalizers release %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--dry-run")
	if !strings.Contains(out, "would release") || !strings.Contains(out, "2 object(s)") {
		t.Errorf("dry-run output:\n%s", out)
	}
	one, err := objs.Get(ctx, "one", metav1.GetOptions{})
	must(t, err)
	if len(one.GetFinalizers()) != 2 {
		t.Fatalf("--dry-run changed finalizers: %v", one.GetFinalizers())
	}
	out = run()
	if strings.Count(out, "released ") != 2 {
		t.Errorf("release output:\n%s", out)
	}
	for _, name := range []string{"one", "two"} {
		got, err := objs.Get(ctx, name, metav1.GetOptions{})
		must(t, err) // "one" is still held by the other finalizer
		if fs := got.GetFinalizers(); len(fs) != 1 || fs[0] != "other.example.com/keep" {
			t.Errorf("%s finalizers %v, want only the foreign one left", name, fs)
		}
		_, err = objs.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		must(t, err)
	}
}
