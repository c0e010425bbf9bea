package executor_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/testoperator"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// panicValue is what panickingSink panics with: it must reach the log
// only, never an error a client or an Event shows.
const panicValue = "sink bug with data-7f3a"

// panickingSink panics in its first panics calls of Apply, as a bug
// reached by what a hook wrote would, then keeps what it is given.
type panickingSink struct {
	mu      sync.Mutex
	panics  int
	applied []ops.Operation
}

func (s *panickingSink) Apply(_ context.Context, _ string, operations []ops.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panics > 0 {
		s.panics--
		panic(panicValue)
	}
	s.applied = append(s.applied, operations...)
	return nil
}

func (s *panickingSink) appliedOps() []ops.Operation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ops.Operation(nil), s.applied...)
}
func (s *panickingSink) EnsureFinalizer(finalizer.Target)                        {}
func (s *panickingSink) RemoveFinalizer(context.Context, finalizer.Target) error { return nil }

// counter is the value of the operator's counter name in the series with
// labels.
func counter(m *metrics.Metrics, name string, labels map[string]string) float64 {
	for _, f := range m.Gather() {
		if f.Name != metrics.DefaultPrefix+name {
			continue
		}
	series:
		for _, s := range f.Series {
			for i, l := range f.Labels {
				if s.Values[i] != labels[l] {
					continue series
				}
			}
			return s.Value
		}
	}
	return 0
}

// A panic while a run's output is handled (here, in the Sink) fails that
// run alone, for a queued run, an admission request and a conversion
// alike: the Executor returns an error that says the operator failed,
// without the panic's value, which goes to the log with the stack; the
// panic is counted, and the run counts as failed. The next run goes on.
func TestExecutorContainsPanics(t *testing.T) {
	h := scriptHook(t, "writer.sh", `#!/usr/bin/env bash
echo '{"operation": "Delete", "kind": "ConfigMap", "namespace": "n", "name": "x"}' >"$KUBERNETES_PATCH_PATH"
if [[ -n "${VALIDATING_RESPONSE_PATH:-}" ]]; then echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"; fi
if [[ -n "${CONVERSION_RESPONSE_PATH:-}" ]]; then echo '{"convertedObjects": []}' >"$CONVERSION_RESPONSE_PATH"; fi
`)
	logs := &testoperator.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetFormatter(&logrus.JSONFormatter{})
	m := metrics.New(metrics.DefaultPrefix)
	sink := &panickingSink{panics: 3}
	var reports []executor.Report
	e := &executor.Executor{Objects: noObjects{}, Runner: &run.Runner{TmpDir: t.TempDir(), Env: os.Environ(), Log: log}, Sink: sink, Metrics: m, Log: log,
		Report: func(r executor.Report) { reports = append(reports, r) }}
	const said = "the operator failed while handling it (a recovered panic: a bug, whose stack is in its log)"

	err := e.Execute(context.Background(), executor.StartupTask(h))
	if err == nil || !strings.Contains(err.Error(), "recovered panic") {
		t.Errorf("a queued run whose Sink panicked: %v, want an error saying a panic was recovered", err)
	}
	if len(reports) != 1 || reports[0].Err == nil {
		t.Errorf("the run's report: %+v, want one with the error", reports)
	}

	_, err = e.Admit(context.Background(), h, hook.WebhookBinding{Common: hook.Common{Name: "policy.example.com"}}, false,
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1"}}`), 5*time.Second)
	var ae *executor.AdmitError
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, "hook writer.sh, binding policy.example.com: "+said) || strings.Contains(ae.Msg, panicValue) {
		t.Errorf("an admission request whose Sink panicked: %v, want an AdmitError saying %q and not the panic's value", err, said)
	}

	_, err = e.Convert(context.Background(), h, hook.ConversionBinding{Common: hook.Common{Name: "ct.example.com"}, CRDName: "crontabs.example.com"},
		hook.ConversionRule{FromVersion: "example.com/v1", ToVersion: "example.com/v2"}, webhook.ConversionRequest{UID: "u-2", DesiredAPIVersion: "example.com/v2"}, 5*time.Second)
	var ce *executor.ConvertError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "hook writer.sh, binding ct.example.com: "+said) || strings.Contains(ce.Msg, panicValue) {
		t.Errorf("a conversion whose Sink panicked: %v, want a ConvertError saying %q and not the panic's value", err, said)
	}

	for where, want := range map[string]float64{"run": 1, "admission": 1, "conversion": 1} {
		if got := counter(m, "panics_recovered_total", map[string]string{"where": where}); got != want {
			t.Errorf("panics_recovered_total{where=%q} = %v, want %v", where, got, want)
		}
	}
	if got := counter(m, "hook_run_errors_total", map[string]string{"hook": "writer.sh", "binding": "onStartup", "queue": "main"}); got != 1 {
		t.Errorf("hook_run_errors_total of the queued run = %v, want 1", got)
	}
	for _, want := range []string{panicValue, "recovered a panic", "panickingSink", `"where":"admission"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q (the panic, its stack, where):\n%s", want, logs.String())
		}
	}

	if err := e.Execute(context.Background(), executor.StartupTask(h)); err != nil || len(sink.appliedOps()) != 1 {
		t.Errorf("the run after: %v, applied %v; want it to apply its operation", err, sink.appliedOps())
	}
}
