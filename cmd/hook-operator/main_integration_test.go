package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// SIGTERM: no new work, the running hook finishes, exit code 0.
func TestIntegrationStartStopsGracefully(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	h.hook(t, "slow-start.sh", `#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
touch `+marks+`/started
sleep 2
touch `+marks+`/finished
`)
	o := h.start(t)
	o.waitFor(t, "the onStartup hook to start", func() bool {
		_, err := os.Stat(filepath.Join(marks, "started"))
		return err == nil
	})
	if err := o.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v (want 0)", err)
	}
	if _, err := os.Stat(filepath.Join(marks, "finished")); err != nil {
		t.Errorf("the running hook was not allowed to finish: %v", err)
	}
	if !strings.Contains(o.logs.String(), "no new work") {
		t.Errorf("the log does not say that shutdown began:\n%s", o.logs.String())
	}
}

// Invalid configurations stop start-up with every error, before any
// cluster connection.
func TestStartRefusesInvalidHooks(t *testing.T) {
	t.Parallel()
	hooks := t.TempDir()
	writeHook(t, hooks, "a.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v1","kubernetes":[{"kind":"Pod","jqFilter":".a |"}]}'
`)
	writeHook(t, hooks, "b.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v2"}'
`)
	out := startFails(t, hooks, operatorOpts{kubeconfig: "/nonexistent"}, time.Minute)
	wantAll(t, "start's error", out, "a.sh", "kubernetes[0].jqFilter", "b.sh", "configVersion")
	if strings.Contains(out, "nonexistent") {
		t.Errorf("start reached the cluster connection before refusing the hooks:\n%s", out)
	}
}

// finalizers release frees objects held by a hook's finalizer once the hook
// is gone; --dry-run only reports them.
func TestIntegrationFinalizersRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	gvr := h.c.InstallCRD(t, testcluster.CRD{Kind: "Held"})

	h.hook(t, "held.sh", `#!/usr/bin/env bash
echo '{"configVersion":"v1","kubernetes":[{"apiVersion":"`+gvr.Group+`/v1","kind":"Held","finalizer":"test.hook-operator.dev/keep"}]}'
`)
	ctx := context.Background()
	objs := h.c.Dynamic.Resource(gvr).Namespace(h.ns)
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
		out, err := exec.Command(h.bin, append([]string{"finalizers", "release", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig}, args...)...).CombinedOutput()
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
