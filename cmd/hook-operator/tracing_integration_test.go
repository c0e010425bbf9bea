package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/jaegertest"
)

// envTracePicture, set to a path, makes TestIntegrationTracing draw the
// trace of the bash hook's event there (docs/tracing-trace.svg is made so).
const envTracePicture = "HOOK_OPERATOR_TRACE_PICTURE"

// An operator pointed at a real Jaeger with shell-operator's variables
// sends, for each event, one trace that Jaeger's API gives back whole and
// correctly parented: the watch event at its root, its wait in the queue,
// the run, the hook's process, the span the hook recorded itself (a bash
// hook with the helpers, run one-shot, and a Go hook with the SDK, run
// resident), the check of its output and the operation it applied. An
// admission review is one trace too, with the API server's request uid.
func TestIntegrationTracing(t *testing.T) {
	t.Parallel()
	jaeger := jaegertest.Start(t)
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	configName := "hook-operator-test-" + ns
	lib, err := filepath.Abs("../../hooks/lib/hook.sh")
	must(t, err)

	// eventHook is a bash hook with the helpers, run for each ConfigMap of
	// ns labelled trace=<label> that is added.
	eventHook := func(name, label, body string) {
		w.hook(t, name, `#!/usr/bin/env bash
set -euo pipefail
source `+lib+`
hook::config "$@" <<'CONFIG'
configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  executeHookOnSynchronization: false
  executeHookOnEvent: [Added]
  namespace: {nameSelector: {matchNames: [`+ns+`]}}
  labelSelector: {matchLabels: {trace: `+label+`}}
CONFIG
`+body)
	}
	eventHook("label.sh", "bash", `label() { hook::merge_patch ConfigMap "`+ns+`" "$1" '{"metadata":{"labels":{"traced":"bash"}}}'; }
for name in $(jq -r '.[] | select(.type == "Event") | .object.metadata.name' "$BINDING_CONTEXT_PATH"); do
  hook::span "label configmap" configmap="$name" -- label "$name"
done
`)
	w.hook(t, "validate.sh", `#!/usr/bin/env bash
set -euo pipefail
source `+lib+`
hook::config "$@" <<'CONFIG'
configVersion: v1
kubernetesValidating:
- name: traced.tracing-test.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: `+ns+`}}}
  labelSelector: {matchLabels: {trace: admission}}
CONFIG
check() { echo '{"allowed": true}' > "$VALIDATING_RESPONSE_PATH"; }
hook::span "check request" -- check
`)
	marks := t.TempDir()
	eventHook("flaky.sh", "retry", `if [[ ! -e `+marks+`/failed ]]; then touch `+marks+`/failed; echo "the first run fails" >&2; exit 1; fi
hook::merge_patch ConfigMap "`+ns+`" retried '{"metadata":{"labels":{"traced":"retry"}}}'
`)
	goHook := filepath.Join(w.hooks, "tracehook")
	if out, err := gobuild.Command("", "-o", goHook, "./testdata/tracehook").CombinedOutput(); err != nil {
		t.Fatalf("building the Go hook: %v\n%s", err, out)
	}

	service := "hook-operator-" + ns
	deleteConfigurationsAtEnd(t, c, configName)
	o := startOperator(t, w.hooks, operatorOpts{env: []string{
		"TRACING_OTLP_ENDPOINT=" + jaeger.OTLPEndpoint, "TRACING_OTLP_AUTH_TOKEN=s3cret-token",
		"OTEL_SERVICE_NAME=" + service, "OTEL_BSP_SCHEDULE_DELAY=200", "TRACE_NS=" + ns,
	}, flags: webhookFlags(w.certs, w.port, configName)})
	o.waitReady(t)
	if logs := o.logs.String(); !strings.Contains(logs, `"msg":"tracing on"`) || strings.Contains(logs, "s3cret-token") {
		t.Errorf("the start's log should say tracing is on, without the token:\n%s", logs)
	}

	ctx := context.Background()
	create := func(name, trace string) { w.configMap(t, name, map[string]string{"trace": trace}, nil) }
	create("by-bash", "bash")
	create("by-go", "go")

	for _, tc := range []struct{ object, hook, own string }{
		{"by-bash", "label.sh", "label configmap"},
		{"by-go", "tracehook", "go work"},
	} {
		tr := jaeger.WaitTrace(t, ctx, service, func(tr jaegertest.Trace) bool {
			root := tr.Span("watch event")
			return root != nil && root.Attributes["k8s.object.name"] == tc.object && tr.Span("operation") != nil && tr.Span(tc.own) != nil
		}, 60*time.Second)
		checkEventTrace(t, tr, tc.object, tc.hook, tc.own, ns)
		if tc.object == "by-bash" {
			if path := os.Getenv(envTracePicture); path != "" {
				must(t, os.WriteFile(path, jaegertest.SVG(tr), 0o644))
			}
		}
	}

	// A run that fails and its retry: two attempts in the event's trace,
	// the first an error, each after its own wait.
	create("retried", "retry")
	tr := jaeger.WaitTrace(t, ctx, service, func(tr jaegertest.Trace) bool {
		root := tr.Span("watch event")
		return root != nil && root.Attributes["k8s.object.name"] == "retried" && tr.Span("operation") != nil
	}, 60*time.Second)
	var runs, waits []jaegertest.Span
	for _, s := range tr.Spans {
		switch s.Name {
		case "hook run":
			runs = append(runs, s)
		case "queue wait":
			waits = append(waits, s)
		}
	}
	root := tr.Span("watch event")
	if len(runs) != 2 || len(waits) != 2 || !runs[0].StatusError || runs[1].StatusError ||
		runs[0].Attributes["hook.attempt"] != "1" || runs[1].Attributes["hook.attempt"] != "2" ||
		!strings.Contains(runs[0].StatusMessage, "exit") || runs[0].ParentSpanID != root.SpanID || runs[1].ParentSpanID != root.SpanID {
		t.Errorf("a failed run and its retry:\n%s", describe(tr))
	}

	// The admission review: a trace of its own.
	o.waitLog(t, `"msg":"webhook configuration applied"`)
	var out string
	waitUntil(t, "an admitted create", func() bool {
		out, err = kubectlApply(c.Kubeconfig, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: admitted, namespace: %s, labels: {trace: admission}}\n", ns))
		return err == nil && strings.Contains(o.logs.String(), `"msg":"admission hook answered"`)
	}, func() string { return out + "\n" + o.logs.String() })
	tr = jaeger.WaitTrace(t, ctx, service, func(tr jaegertest.Trace) bool {
		r := tr.Span("admission review")
		return r != nil && r.Attributes["k8s.object.name"] == "admitted" && tr.Span("check request") != nil
	}, 60*time.Second)
	review, process, own := tr.Span("admission review"), tr.Span("hook process"), tr.Span("check request")
	if review.ParentSpanID != "" || review.Kind != "server" || len(review.Attributes["k8s.review.uid"]) != 36 ||
		review.Attributes["hook.result"] != "allowed" || review.Attributes["k8s.review.operation"] != "CREATE" {
		t.Errorf("admission review span: %+v", *review)
	}
	if process == nil || process.ParentSpanID != review.SpanID || own.ParentSpanID != process.SpanID {
		t.Errorf("admission trace not parented review > process > hook's span:\n%s", describe(tr))
	}
}

// checkEventTrace checks one watch event's trace: every span there, each
// under the right parent, with the attributes that say what it was.
func checkEventTrace(t *testing.T, tr jaegertest.Trace, object, hook, own, ns string) {
	t.Helper()
	spans := map[string]*jaegertest.Span{}
	for _, name := range []string{"watch event", "queue wait", "hook run", "hook process", own, "hook output", "operation"} {
		if spans[name] = tr.Span(name); spans[name] == nil {
			t.Fatalf("%s: no %q span in the trace:\n%s", object, name, describe(tr))
		}
	}
	parents := map[string]string{"queue wait": "watch event", "hook run": "watch event", "hook process": "hook run",
		own: "hook process", "hook output": "hook run", "operation": "hook output"}
	for child, parent := range parents {
		if spans[child].ParentSpanID != spans[parent].SpanID {
			t.Errorf("%s: %q is not under %q:\n%s", object, child, parent, describe(tr))
		}
	}
	root, op := spans["watch event"], spans["operation"]
	if root.ParentSpanID != "" || root.Attributes["hook.name"] != hook || root.Attributes["k8s.event.type"] != "Added" ||
		root.Attributes["k8s.namespace.name"] != ns || root.Attributes["k8s.object.kind"] != "ConfigMap" {
		t.Errorf("%s: root span %+v", object, *root)
	}
	if op.Attributes["operation.type"] != "MergePatch" || op.Attributes["k8s.object.name"] != object ||
		op.Attributes["operation.result"] != "applied" || op.StatusError {
		t.Errorf("%s: operation span %+v", object, *op)
	}
	if got := spans[own].Attributes["hook.name"]; got != hook {
		t.Errorf("%s: the hook's span has hook.name %q", object, got)
	}
	if hook == "tracehook" {
		// The traceparent the SDK gives the hook's calls names the
		// hook's span, as exported.
		if want := "00-" + tr.ID + "-" + spans[own].SpanID + "-01"; spans[own].Attributes["outgoing.traceparent"] != want {
			t.Errorf("the Go hook's traceparent %q, want %q", spans[own].Attributes["outgoing.traceparent"], want)
		}
		if spans["hook process"].Attributes["hook.resident"] != "true" {
			t.Errorf("the Go hook's process span: %+v", spans["hook process"].Attributes)
		}
	}
}

func describe(tr jaegertest.Trace) string {
	var b strings.Builder
	for _, s := range tr.Spans {
		fmt.Fprintf(&b, "  %s %q parent %s %v\n", s.SpanID, s.Name, s.ParentSpanID, s.Attributes)
	}
	return b.String()
}
