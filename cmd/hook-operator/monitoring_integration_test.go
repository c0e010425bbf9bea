package main_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// kitMetricNames returns the metric names that the monitoring kit's alerts
// (deploy/monitoring/alerts.yaml) and dashboard (dashboard.json) query.
func kitMetricNames(t *testing.T) []string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must(t, err)
	name := regexp.MustCompile(`\b(?:hook_operator|process|go)_[a-z_]+\b`)
	var names []string
	alerts, err := os.ReadFile(filepath.Join(root, "deploy", "monitoring", "alerts.yaml"))
	must(t, err)
	for _, line := range strings.Split(string(alerts), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			names = append(names, name.FindAllString(line, -1)...)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "monitoring", "dashboard.json"))
	must(t, err)
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	must(t, json.Unmarshal(data, &dash))
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			names = append(names, name.FindAllString(tg.Expr, -1)...)
		}
	}
	for _, v := range dash.Templating.List {
		names = append(names, name.FindAllString(v.Definition, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// servedNames returns the names of the samples a /metrics page holds (a
// histogram's as name_bucket, name_sum and name_count).
func servedNames(page string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(page, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// Every metric the monitoring kit's alerts and dashboard query is one a
// running operator serves: an operator with leader election, sharding, a
// webhook, hooks that fail (one with allowFailure), a hook that writes an
// object, and a change of the hooks folder that is not valid, so that each
// family has a series.
func TestIntegrationMonitoringMetricsServed(t *testing.T) {
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	configName := "hook-operator-test-" + ns
	watched := `"namespace":{"nameSelector":{"matchNames":["` + ns + `"]}},"labelSelector":{"matchLabels":{"monitoring-test":"yes"}}`

	hooks := t.TempDir()
	writeHook(t, hooks, "fail.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"jqFilter":".data"}]}`,
		// Synchronization succeeds, so that the binding's events are let through; each event fails.
		`jq -e '.[0].type == "Synchronization"' "$BINDING_CONTEXT_PATH" >/dev/null && exit 0
exit 1
`))
	writeHook(t, hooks, "allowed.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"allowFailure":true,"queue":"allowed"}]}`, "exit 1\n"))
	writeHook(t, hooks, "write.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"queue":"write"}]}`,
		`echo '{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"written","namespace":"`+ns+`"},"data":{"by":"write.sh"}}}' >"$KUBERNETES_PATCH_PATH"
`))
	writeHook(t, hooks, "validate.sh", `#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
cat <<EOF
configVersion: v1
kubernetesValidating:
- name: monitoring.admission-test.example.com
  timeoutSeconds: 5
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: `+ns+`}}}
  labelSelector: {matchLabels: {monitoring-webhook: "yes"}}
EOF
exit 0
fi
exit 1
`)
	deleteConfigurationsAtEnd(t, c, configName)
	o := w.start(t, hooks, configName, append(electionArgs(ns, "op-1"), "--sharding")...)

	cm := func(name, label, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {%s: \"yes\"}}\ndata: {value: %s}\n", name, ns, label, value)
	}
	var out string
	waitUntil(t, "a watched object", func() bool {
		out, _ = kubectlApply(c.Kubeconfig, cm("watched", "monitoring-test", "one"))
		return strings.Contains(out, "created") || strings.Contains(out, "configured") || strings.Contains(out, "unchanged")
	}, func() string { return out + "\n" + o.logs.String() })
	// The webhook's hook fails: the API server gets an error.
	waitUntil(t, "the webhook's error", func() bool {
		out, _ = kubectlApply(c.Kubeconfig, cm("checked", "monitoring-webhook", "x"))
		return strings.Contains(out, "denied the request")
	}, func() string { return out + "\n" + o.logs.String() })
	// A GET is rejected before any hook runs.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := client.Get("https://127.0.0.1:" + w.port + "/"); err == nil {
		resp.Body.Close()
	}
	// A change of the hooks folder that is not valid.
	writeHook(t, hooks, "broken.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"x"}]}`, "exit 0\n"))

	want := kitMetricNames(t)
	if len(want) < 20 {
		t.Fatalf("the kit queries %d metrics: %v; the names were not found", len(want), want)
	}
	var missing []string
	round := 0
	waitUntil(t, "every metric of the kit on /metrics", func() bool {
		// Changes of the watched object, until the watch (which starts
		// when this replica leads) has seen some: one of its data, which
		// the hooks get, and one of a label only, which the jqFilter
		// (.data) of fail.sh suppresses.
		round++
		_, _ = kubectlApply(c.Kubeconfig, cm("watched", "monitoring-test", fmt.Sprintf("r%d", round)))
		_, _ = kubectlApply(c.Kubeconfig, strings.Replace(cm("watched", "monitoring-test", fmt.Sprintf("r%d", round)), "labels: {", fmt.Sprintf("labels: {round: r%d, ", round), 1))
		_, page := o.get(t, "/metrics")
		served := servedNames(page)
		missing = missing[:0]
		for _, name := range want {
			if !served[name] {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0
	}, func() string { return fmt.Sprintf("not served: %v\n%s", missing, o.logs.String()) })
}
