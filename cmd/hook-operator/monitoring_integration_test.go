package main_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
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
	name := regexp.MustCompile(`\b(?:hook_operator|process|go)_[a-z_]+\b`)
	var names []string
	alerts := monitoringFile(t, "alerts.yaml")
	for _, line := range strings.Split(string(alerts), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			names = append(names, name.FindAllString(line, -1)...)
		}
	}
	data := monitoringFile(t, "dashboard.json")
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

// kitOperator is an operator that gives every family the monitoring kit
// queries a series (startKitOperator's), and the namespace it works in.
type kitOperator struct {
	*observed
	c     *testcluster.Cluster
	ns    string
	round int
}

// startKitOperator starts, in w's namespace, an operator with leader
// election (identity op-1), sharding, a webhook, hooks that fail (one with
// allowFailure), a hook that writes an object, and a change of the hooks
// folder that is not valid, with the flags extra besides. It leaves a
// webhook request failed by its hook and one rejected before any hook ran;
// poke sends more events and webhook requests.
func startKitOperator(t *testing.T, w *webhookTest, extra ...string) *kitOperator {
	t.Helper()
	c, ns := w.c, w.ns
	configName := "hook-operator-test-" + ns
	watched := `"namespace":{"nameSelector":{"matchNames":["` + ns + `"]}},"labelSelector":{"matchLabels":{"monitoring-test":"yes"}}`

	w.hook(t, "fail.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"jqFilter":".data"}]}`,
		// Synchronization succeeds, so that the binding's events are let through; each event fails.
		`jq -e '.[0].type == "Synchronization"' "$BINDING_CONTEXT_PATH" >/dev/null && exit 0
exit 1
`))
	w.hook(t, "allowed.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"allowFailure":true,"queue":"allowed"}]}`, "exit 1\n"))
	w.hook(t, "write.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+watched+`,"queue":"write"}]}`,
		`echo '{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"written","namespace":"`+ns+`"},"data":{"by":"write.sh"}}}' >"$KUBERNETES_PATCH_PATH"
`))
	w.hook(t, "validate.sh", `#!/usr/bin/env bash
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
	args := append(append(electionArgs(ns, "op-1"), "--sharding"), extra...)
	o := &kitOperator{observed: w.startWebhooks(t, configName, args...), c: c, ns: ns}

	var out string
	waitUntil(t, "a watched object", func() bool {
		out, _ = kubectlApply(c.Kubeconfig, o.configMap("watched", "monitoring-test", "one", ""))
		return strings.Contains(out, "created") || strings.Contains(out, "configured") || strings.Contains(out, "unchanged")
	}, func() string { return out + "\n" + o.logs.String() })
	// The webhook's hook fails: the API server gets an error.
	waitUntil(t, "the webhook's error", func() bool {
		out, _ = kubectlApply(c.Kubeconfig, o.configMap("checked", "monitoring-webhook", "x", ""))
		return strings.Contains(out, "denied the request")
	}, func() string { return out + "\n" + o.logs.String() })
	// A GET is rejected before any hook runs.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := client.Get("https://127.0.0.1:" + w.port + "/"); err == nil {
		resp.Body.Close()
	}
	// A change of the hooks folder that is not valid.
	w.hook(t, "broken.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"x"}]}`, "exit 0\n"))
	return o
}

// configMap is the manifest of a ConfigMap of o's namespace labelled
// label: "yes" (and round: round, unless empty).
func (o *kitOperator) configMap(name, label, value, round string) string {
	labels := label + `: "yes"`
	if round != "" {
		labels += ", round: " + round
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {%s}}\ndata: {value: %s}\n", name, o.ns, labels, value)
}

// poke changes the watched object twice, so that the watch (which starts
// when this replica leads) sees changes: one of its data, which the hooks
// get (fail.sh fails again), and one of a label only, which the jqFilter
// (.data) of fail.sh suppresses; and sends the webhook a request (its hook
// fails), so that a rate of its answers has one in its window.
func (o *kitOperator) poke() {
	o.round++
	r := fmt.Sprintf("r%d", o.round)
	_, _ = kubectlApply(o.c.Kubeconfig, o.configMap("watched", "monitoring-test", r, ""))
	_, _ = kubectlApply(o.c.Kubeconfig, o.configMap("watched", "monitoring-test", r, r))
	_, _ = kubectlApply(o.c.Kubeconfig, o.configMap("checked", "monitoring-webhook", r, ""))
}

// Every metric the monitoring kit's alerts and dashboard query is one a
// running operator serves: startKitOperator's, which gives each family a
// series.
func TestIntegrationMonitoringMetricsServed(t *testing.T) {
	t.Parallel()
	o := startKitOperator(t, newWebhookTest(t))
	want := kitMetricNames(t)
	if len(want) < 20 {
		t.Fatalf("the kit queries %d metrics: %v; the names were not found", len(want), want)
	}
	var missing []string
	waitUntil(t, "every metric of the kit on /metrics", func() bool {
		o.poke()
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
