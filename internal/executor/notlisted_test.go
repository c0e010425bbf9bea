package executor_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// A queued run whose context carries the snapshot of a binding that has
// not listed (as after a reload restarted it while the run waited) is not
// run, so that the hook never sees that snapshot empty: it fails, to be
// retried, and counts in binding_monitor_missing_total, shell-operator's
// metric for an empty snapshot of a binding without a running monitor.
// Once the binding has listed, the retry runs with its objects.
func TestExecuteWaitsForSnapshotsThatHaveNotListed(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "tick.sh")
	ran := filepath.Join(dir, "ran")
	must(t, os.WriteFile(script, []byte("#!/usr/bin/env bash\ncat \"$BINDING_CONTEXT_PATH\" >"+ran+"\n"), 0o755))
	cfg, err := hook.ParseConfig("tick.sh", []byte(`{"configVersion":"v1",
		"kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false}],
		"schedule":[{"name":"tick","crontab":"* * * * *","includeSnapshotsFrom":["cms"]}]}`))
	must(t, err)
	h := &hook.Hook{Name: "tick.sh", Path: script, Dir: dir, Config: cfg}
	log := logrus.New()
	log.SetOutput(io.Discard)
	mem, err := watch.NewMemory([]*hook.Hook{h}, kube.NewStaticResolver(kube.BuiltinResources()), emptyObjects{}, nullSink{}, log)
	must(t, err)
	m := metrics.New("p_")
	e := &executor.Executor{Objects: mem, Runner: &run.Runner{TmpDir: t.TempDir(), Env: os.Environ(), Log: log}, Sink: &recordingSink{}, Metrics: m, Log: log}
	task := executor.NewTask(h, &cfg.Schedule[0].Common, executor.ScheduleContext(&cfg.Schedule[0]))

	err = e.Execute(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "binding(s) cms, whose snapshots the run carries, have not listed") {
		t.Fatalf("before cms listed: %v, want an error naming cms", err)
	}
	if _, statErr := os.Stat(ran); statErr == nil {
		t.Fatal("the hook ran with the snapshot of a binding that had not listed")
	}
	var b strings.Builder
	must(t, metrics.WriteText(&b, m.Gather()))
	if !strings.Contains(b.String(), `p_binding_monitor_missing_total{binding="cms",hook="tick.sh"} 1`+"\n") {
		t.Errorf("not counted in binding_monitor_missing_total:\n%s", b.String())
	}

	mem.Synchronize()
	if err := e.Execute(context.Background(), task); err != nil {
		t.Fatalf("after cms listed: %v", err)
	}
	data, err := os.ReadFile(ran)
	must(t, err)
	if !strings.Contains(string(data), `"snapshots":{"cms":[]}`) {
		t.Errorf("the run's context: %s, want cms's snapshot", data)
	}
}
