package operator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// env is one test's operator: its hooks folder, its log, and the cluster.
type env struct {
	t        *testing.T
	c        *testcluster.Cluster
	ns       string
	dir      string
	records  string
	logs     *syncBuffer
	cancel   context.CancelFunc
	finished chan error
	// op is the running operator, once started.
	op *operator.Operator
	// watchIdle, set before start, is the operator's WatchIdleTimeout.
	watchIdle time.Duration
	// events, set before start, makes the operator write Events; pod,
	// set before start, is the operator's Pod, which Events about the
	// operator go to.
	events bool
	pod    operator.PodRef
	// sink and metrics, set before start, are the operator's Sink (nil:
	// the cluster) and Metrics.
	sink    executor.Sink
	metrics *metrics.Metrics
}

func newEnv(t *testing.T) *env {
	c := testcluster.Get(t)
	e := &env{t: t, c: c, ns: c.Namespace(t), dir: t.TempDir(), logs: &syncBuffer{}}
	e.records = filepath.Join(t.TempDir(), "records")
	if err := os.MkdirAll(e.records, 0o700); err != nil {
		t.Fatal(err)
	}
	return e
}

// bashHook writes an executable bash hook: it prints config on --config,
// records each run's binding contexts as one JSON line, then runs body.
func (e *env) bashHook(name, config, body string) {
	e.t.Helper()
	config = strings.ReplaceAll(config, "NAMESPACE", e.ns)
	script := fmt.Sprintf(`#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
cat <<'HOOK_CONFIG'
%s
HOOK_CONFIG
exit 0
fi
jq -c . "$BINDING_CONTEXT_PATH" >> %q
%s
`, config, e.recordFile(name), body)
	path := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) recordFile(hookName string) string {
	return filepath.Join(e.records, strings.ReplaceAll(hookName, "/", "_")+".jsonl")
}

var (
	goHookOnce sync.Once
	goHookPath string
	goHookErr  error
)

// goHook installs the compiled Go test hook (testdata/gohook) under name
// with the given JSON config.
func (e *env) goHook(name, config string) {
	e.t.Helper()
	goHookOnce.Do(func() {
		goHookPath, goHookErr = testoperator.Build("./internal/operator/testdata/gohook", "operator-gohook")
	})
	if goHookErr != nil {
		e.t.Fatal(goHookErr)
	}
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	bin, err := os.ReadFile(goHookPath)
	if err != nil {
		e.t.Fatal(err)
	}
	must(e.t, os.WriteFile(filepath.Join(dir, "hook"), bin, 0o755))
	must(e.t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.ReplaceAll(config, "NAMESPACE", e.ns)), 0o644))
	must(e.t, os.WriteFile(filepath.Join(dir, "record.path"), []byte(e.recordFile(name+"/hook")), 0o644))
}

// start loads the hooks and runs an operator until the test ends, as
// start does: its runnables under a manager, here without an elector.
func (e *env) start() {
	e.t.Helper()
	log := logrus.New()
	log.SetOutput(e.logs)
	log.SetLevel(logrus.DebugLevel)
	log.SetFormatter(&logrus.JSONFormatter{})
	ctx, cancel := context.WithCancel(context.Background())
	hooks, err := hook.Load(ctx, e.dir, hook.LoadOptions{})
	if err != nil {
		cancel()
		e.t.Fatalf("load hooks: %v", err)
	}
	clients, err := kube.NewClients(e.c.Config)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	op := operator.New(hooks, clients, operator.Options{
		TmpDir:        e.t.TempDir(),
		HookTimeout:   time.Minute,
		Queue:         queue.Options{RetryInitial: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond},
		ShutdownGrace: 5 * time.Second,
		Env:           os.Environ(),

		WatchIdleTimeout: e.watchIdle,
		Events:           e.events,
		Pod:              e.pod,
		Sink:             e.sink,
		Metrics:          e.metrics,
	}, log)
	e.cancel = cancel
	e.finished = make(chan error, 1)
	e.op = op
	mgr := manager.New(manager.Options{Log: log})
	always, leading := op.Runnables()
	mgr.Add(manager.Always, "operator", always)
	mgr.Add(manager.Leading, "hooks", leading)
	go func() { e.finished <- mgr.Run(ctx) }()
	e.t.Cleanup(func() {
		e.stop()
		if e.t.Failed() {
			e.t.Logf("operator log:\n%s", e.logs.String())
		}
	})
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.finished:
		if err != nil {
			e.t.Errorf("the manager running the operator returned %v", err)
		}
	case <-time.After(15 * time.Second):
		e.t.Errorf("operator did not stop within 15s")
	}
	e.cancel = nil
}

// runs returns every recorded run of a hook: each a list of contexts.
func (e *env) runs(hookName string) [][]map[string]any {
	data, err := os.ReadFile(e.recordFile(hookName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var run []map[string]any
		if err := json.Unmarshal(sc.Bytes(), &run); err != nil {
			e.t.Fatalf("record of %s: %v: %s", hookName, err, sc.Text())
		}
		out = append(out, run)
	}
	return out
}

// contexts returns every recorded context of a hook, runs flattened.
func (e *env) contexts(hookName string) []map[string]any {
	var out []map[string]any
	for _, r := range e.runs(hookName) {
		out = append(out, r...)
	}
	return out
}

// eventually polls cond until it holds or timeout passes.
func (e *env) eventually(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// eventMessage waits for an Event with reason about the object named
// involved, in the test's namespace, and returns its message.
func (e *env) eventMessage(involved, reason string) string {
	e.t.Helper()
	var msg string
	e.eventually(30*time.Second, fmt.Sprintf("a %s Event on %s", reason, involved), func() bool {
		evs, err := e.c.Client.CoreV1().Events(e.ns).List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.name=" + involved + ",reason=" + reason})
		if err != nil || len(evs.Items) == 0 {
			return false
		}
		msg = evs.Items[0].Message
		return true
	})
	return msg
}

// describe summarizes contexts as "type/watchEvent/name" strings.
func describe(contexts []map[string]any) []string {
	var out []string
	for _, c := range contexts {
		s := fmt.Sprint(c["binding"], ":", c["type"])
		if ev, ok := c["watchEvent"]; ok {
			s += "/" + fmt.Sprint(ev)
		}
		if obj, ok := c["object"].(map[string]any); ok {
			s += "/" + name(obj)
		}
		out = append(out, s)
	}
	return out
}

func name(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct{ testoperator.Buffer }

func (s *syncBuffer) contains(sub string) bool { return strings.Contains(s.String(), sub) }

// cmsConfig is the configuration of a hook with one kubernetes binding,
// cms, of the ConfigMaps in the test's namespace; extra adds fields to that
// binding (indented two spaces) or more bindings and keys after it.
func cmsConfig(extra string) string {
	return "\nconfigVersion: v1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  namespace: {nameSelector: {matchNames: [NAMESPACE]}}\n" + extra
}

// gate is a file a hook waits for: its runs hang until the test opens it.
type gate string

func newGate(t *testing.T) gate { return gate(filepath.Join(t.TempDir(), "gate")) }

// wait is the bash that waits until the gate is open.
func (g gate) wait() string { return fmt.Sprintf("while [[ ! -e %q ]]; do sleep 0.1; done", string(g)) }

// open lets every waiting run go on.
func (g gate) open(t *testing.T) { must(t, os.WriteFile(string(g), nil, 0o644)) }

// waitReady waits until the operator reports itself ready.
func (e *env) waitReady(timeout time.Duration) {
	e.t.Helper()
	e.eventually(timeout, "readiness", func() bool {
		ok, _ := e.op.Ready(context.Background())
		return ok
	})
}

// wantLogged reports an error, what the log lacks, when the operator's log
// does not hold sub.
func (e *env) wantLogged(sub, lacks string) {
	e.t.Helper()
	if !e.logs.contains(sub) {
		e.t.Errorf("%s", lacks)
	}
}
