package main_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// An operator started with shell-operator's variable
// SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX=shell_operator_, as a
// shell-operator Deployment sets it, serves shell-operator v1.20.3's own
// metric families beside ours. A real Prometheus scraping it gets data for
// every metric v1.20.3's docs list, once a hook with a kubernetes binding
// has run; live_ticks increases; and increase() of hook_run_errors_total
// sees the hook's first failure, its series having been served at 0 before.
func TestIntegrationMonitoringShellOperatorNames(t *testing.T) {
	t.Parallel()
	promBin := prometheusBinary(t)
	h := newHarness(t)
	dir := t.TempDir()
	addr := "127.0.0.1:" + freePort(t)
	p := startPrometheus(t, promBin, dir, map[string]any{
		"global": map[string]any{"scrape_interval": liveInterval.String(), "evaluation_interval": liveInterval.String()},
		"scrape_configs": []any{map[string]any{"job_name": "shell-operator", "scrape_interval": liveInterval.String(),
			"static_configs": []any{map[string]any{"targets": []string{addr}}}}},
	})
	h.hook(t, "watch.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"jqFilter":".data"}]}`,
		`jq -e 'any(.[]; .object.metadata.name == "bad")' "$BINDING_CONTEXT_PATH" >/dev/null && exit 1
exit 0
`))
	o := h.startEnv(t, []string{"SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX=shell_operator_"}, "--listen-address", addr)
	logs := func() string { return "operator log:\n" + o.logs.String() }
	const errors = `shell_operator_hook_run_errors_total{hook="watch.sh",binding="cms",queue="main"}`
	waitSlowly(t, "the failure counter scraped at 0 after the Synchronization run", func() bool {
		return hasNumber(p.query(t, errors+" == 0"))
	}, logs)
	apply := func(name string) {
		h.apply(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: "+h.ns+"}\ndata: {k: v}\n")
	}
	apply("good")
	apply("bad")

	for _, expr := range []string{
		"increase(" + errors + "[1m]) > 0",
		"increase(shell_operator_live_ticks[1m]) > 0",
		`hook_operator_hook_runs_total{hook="watch.sh"}`, // ours, beside
	} {
		waitSlowly(t, expr+" returning data", func() bool { return hasNumber(p.query(t, expr)) }, logs)
	}
	data, err := os.ReadFile("testdata/shell-operator-v1.20.3-self-metrics.txt")
	must(t, err)
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	if len(names) < 15 {
		t.Fatalf("only %d names in the list", len(names))
	}
	var missing []string
	waitSlowly(t, "data for every metric of shell-operator's docs", func() bool {
		missing = missing[:0]
		for _, name := range names {
			// A histogram's samples are name_bucket, _sum and _count.
			if !hasNumber(p.query(t, fmt.Sprintf(`{__name__=~%q}`, name+"|"+name+"_count"))) {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0
	}, func() string { return "no data: " + strings.Join(missing, ", ") + "\n" + logs() })
}
