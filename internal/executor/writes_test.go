package executor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
)

func writesExecutor(restrict bool) (*Executor, *logtest.Hook, *metrics.Metrics) {
	log, logged := logtest.NewNullLogger()
	m := metrics.New("p_")
	return &Executor{Resolver: kube.NewStaticResolver(kube.BuiltinResources()), Log: log, Metrics: m, RestrictWrites: restrict}, logged, m
}

func writesHook(t *testing.T, config string) *hook.Hook {
	t.Helper()
	cfg, err := hook.ParseConfig("h.sh", []byte("configVersion: v1\n"+config))
	if err != nil {
		t.Fatal(err)
	}
	return &hook.Hook{Name: "h.sh", Config: cfg}
}

func writesOps(t *testing.T, file string) []ops.Operation {
	t.Helper()
	operations, err := ops.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return operations
}

func counted(t *testing.T, m *metrics.Metrics, reason string) string {
	t.Helper()
	var b strings.Builder
	if err := metrics.WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	prefix := `p_writes_outside_declared_total{hook="h.sh",reason="` + reason + `"} `
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return "none"
}

const (
	configMapsInShop = "writes:\n- {kind: ConfigMap, verbs: [create, patch], namespaces: [shop]}\n"
	secretAndOtherCM = `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok", "namespace": "shop"}}}
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"}}}
{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kube-system"}}}`
)

// Without --restrict-writes, operations outside the declared writes pass,
// counted at each run and warned of once per hook, kind and namespace.
func TestWritesWarnedOnce(t *testing.T) {
	e, logged, m := writesExecutor(false)
	h := writesHook(t, configMapsInShop)
	for range 3 {
		if err := e.checkWrites(h, writesOps(t, secretAndOtherCM)); err != nil {
			t.Fatal(err)
		}
	}
	if got := counted(t, m, "kind"); got != "3" {
		t.Errorf("reason kind counted %s, want 3", got)
	}
	if got := counted(t, m, "namespace"); got != "3" {
		t.Errorf("reason namespace counted %s, want 3", got)
	}
	entries := logged.AllEntries()
	if len(entries) != 2 {
		t.Fatalf("%d log lines, want 2 (once per kind and namespace)", len(entries))
	}
	first := entries[0]
	for k, want := range map[string]any{"hook": "h.sh", "operation": 1, "kind": "Secret", "namespace": "shop", "reason": "kind", "writes": "ConfigMap (create, patch) in shop"} {
		if first.Data[k] != want {
			t.Errorf("field %s = %v, want %v", k, first.Data[k], want)
		}
	}
	if first.Level != logrus.WarnLevel || !strings.Contains(first.Message, "operation 1 (Create v1/Secret shop/s): needs create on v1 Secret in namespace shop") {
		t.Errorf("warning %s %q", first.Level, first.Message)
	}
	if ns := entries[1].Data["namespace"]; ns != "kube-system" {
		t.Errorf("second warning about namespace %v, want kube-system", ns)
	}
}

// A hook writing to a new namespace at each operation costs a few lines
// of log, and each operation is counted.
func TestWritesWarningsSampled(t *testing.T) {
	e, logged, m := writesExecutor(false)
	h := writesHook(t, configMapsInShop)
	var file strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&file, `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns-%d"}}}`+"\n", i)
	}
	if err := e.checkWrites(h, writesOps(t, file.String())); err != nil {
		t.Fatal(err)
	}
	if n := len(logged.AllEntries()); n > 10 {
		t.Errorf("%d log lines for 1000 namespaces, want at most 10", n)
	}
	if got := counted(t, m, "namespace"); got != "1000" {
		t.Errorf("counted %s, want 1000", got)
	}
}

// A hook that declares no writes is not checked without --restrict-writes.
func TestWritesUndeclaredNotChecked(t *testing.T) {
	e, logged, m := writesExecutor(false)
	if err := e.checkWrites(writesHook(t, ""), writesOps(t, secretAndOtherCM)); err != nil {
		t.Fatal(err)
	}
	if len(logged.AllEntries()) != 0 || counted(t, m, "no_writes") != "none" {
		t.Error("a hook without writes was checked")
	}
}

// With --restrict-writes, the error names each operation outside, its kind
// and namespace, and the declared writes; its public reason (Events) only
// the first operation's index, type and reason.
func TestWritesRestricted(t *testing.T) {
	e, logged, m := writesExecutor(true)
	err := e.checkWrites(writesHook(t, configMapsInShop), writesOps(t, secretAndOtherCM))
	if err == nil {
		t.Fatal("operations outside the declared writes passed")
	}
	for _, want := range []string{
		"operation 1 (Create v1/Secret shop/s): needs create on v1 Secret in namespace shop, a kind the hook does not declare",
		"operation 2 (Create v1/ConfigMap kube-system/c): needs create on v1 ConfigMap in namespace kube-system, a namespace the hook does not declare for the kind",
		"the hook's writes: ConfigMap (create, patch) in shop",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	reason := PublicReason(fail(writesStatus(err), err))
	if want := "(the first: operation 1, a Create, reason kind)"; !strings.Contains(reason, want) || strings.Contains(reason, "shop") {
		t.Errorf("public reason %q, want %q and no namespace", reason, want)
	}
	if counted(t, m, "kind") != "1" || counted(t, m, "namespace") != "1" {
		t.Error("the refused operations were not counted")
	}
	if len(logged.AllEntries()) != 0 {
		t.Error("a refused run also warned; its error is logged as the run's")
	}
}

// With --restrict-writes, a hook that declares no writes may write
// nothing; Requeue needs no verb.
func TestWritesRestrictedWithoutWrites(t *testing.T) {
	e, _, m := writesExecutor(true)
	h := writesHook(t, "")
	if err := e.checkWrites(h, writesOps(t, `{"operation": "Requeue", "namespace": "x", "name": "y", "after": "1s"}`)); err != nil {
		t.Errorf("Requeue refused: %v", err)
	}
	err := e.checkWrites(h, writesOps(t, `{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "x", "name": "y", "mergePatch": {}}`))
	if err == nil || !strings.Contains(err.Error(), "and the hook declares no writes") || !strings.Contains(err.Error(), "the hook's writes: none") {
		t.Errorf("error %v", err)
	}
	if counted(t, m, "no_writes") != "1" {
		t.Error("not counted")
	}
}
