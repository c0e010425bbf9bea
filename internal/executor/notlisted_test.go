package executor_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// A queued run whose context carries the snapshot of a binding that has
// not listed (as after a reload restarted it while the run waited) is not
// run, so that the hook never sees that snapshot empty: it fails, to be
// retried, and counts in binding_monitor_missing_total, shell-operator's
// metric for an empty snapshot of a binding without a running monitor.
// Once the binding has listed, the retry runs with its objects.
func TestExecuteWaitsForSnapshotsThatHaveNotListed(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	h := scriptHook(t, "tick.sh", "#!/usr/bin/env bash\ncat \"$BINDING_CONTEXT_PATH\" >"+ran+"\n")
	cfg, err := hook.ParseConfig("tick.sh", []byte(`{"configVersion":"v1",
		"kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false}],
		"schedule":[{"name":"tick","crontab":"* * * * *","includeSnapshotsFrom":["cms"]}]}`))
	must(t, err)
	h.Config = cfg
	mem := unlisted(t, h)
	m := metrics.New("p_")
	e := quietExecutor(t, mem, &recordingSink{})
	e.Metrics = m
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

// emptyObjects is a watch.Objects without objects.
type emptyObjects struct{}

func (emptyObjects) List(schema.GroupVersionResource, string) []*unstructured.Unstructured {
	return nil
}

// nullSink is a watch.Sink that drops what it is told.
type nullSink struct{}

func (nullSink) Synchronization(*watch.Binding, []binding.Object) {}
func (nullSink) Event(*watch.Binding, string, binding.Object)     {}
func (nullSink) EnsureFinalizer(*watch.Binding, string, string)   {}

// unlisted returns the watch of h's bindings, with none of them listed.
func unlisted(t *testing.T, h *hook.Hook) *watch.Memory {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	mem, err := watch.NewMemory([]*hook.Hook{h}, kube.NewStaticResolver(kube.BuiltinResources()), emptyObjects{}, nullSink{}, log)
	must(t, err)
	return mem
}

// An admission hook whose context carries the snapshot of a binding that
// has not listed yet is not run: it would see that snapshot empty. Once
// the binding has listed, it is.
func TestAdmitWaitsForItsSnapshots(t *testing.T) {
	h := scriptHook(t, "policy.sh", "#!/usr/bin/env bash\necho '{\"allowed\": true}' >\"$VALIDATING_RESPONSE_PATH\"\n")
	cfg, err := hook.ParseConfig("policy.sh", []byte(`{"configVersion":"v1",
		"kubernetes":[{"name":"cms","kind":"ConfigMap"}],
		"kubernetesValidating":[{"name":"policy.example.com","includeSnapshotsFrom":["cms"],
			"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}]}`))
	must(t, err)
	h.Config = cfg
	mem := unlisted(t, h)
	e := quietExecutor(t, mem, &recordingSink{})
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1"}}`)
	_, err = e.Admit(context.Background(), h, cfg.Validating[0], false, review, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "binding(s) cms, whose snapshots the hook gets, have not synchronized") {
		t.Fatalf("before cms listed: %v, want an error naming cms", err)
	}
	mem.Synchronize()
	if resp, err := e.Admit(context.Background(), h, cfg.Validating[0], false, review, 5*time.Second); err != nil || !resp.Allowed {
		t.Fatalf("after cms listed: %+v, %v", resp, err)
	}
}
