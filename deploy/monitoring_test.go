package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// promtool returns the pinned promtool, built by hack/tools/promtool.sh into
// the per-user cache the first time (a few minutes), found there afterwards.
func promtool(t *testing.T) string {
	t.Helper()
	return testcluster.ToolBinary(t, "promtool.sh")
}

func monitoringDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "deploy", "monitoring")
}

// The PrometheusRule and the chart's copies are what hack/gen-monitoring.sh
// makes of alerts.yaml and dashboard.json.
func TestMonitoringGeneratedFresh(t *testing.T) {
	run(t, repoRoot(t), nil, filepath.Join(repoRoot(t), "hack", "gen-monitoring.sh"), "--check")
}

// The alerts are valid rules and pass their unit tests: each fires where it
// should, with its labels and annotations, and stays quiet where it should.
func TestMonitoringAlertRules(t *testing.T) {
	dir := monitoringDir(t)
	run(t, dir, nil, promtool(t), "check", "rules", "alerts.yaml")
	run(t, dir, nil, promtool(t), "test", "rules", filepath.Join("testdata", "alerts.test.yaml"))
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T, data []byte) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return d
}

// Every query of the dashboard is valid PromQL once Grafana's variables are
// replaced: promtool checks them as recording rules.
func TestMonitoringDashboardQueries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(monitoringDir(t), "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := readDashboard(t, data)
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", "ops")
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			rules = append(rules, rule{Record: "dashboard:query", Expr: vars.Replace(tg.Expr)})
		}
	}
	if len(rules) < 10 {
		t.Fatalf("the dashboard has %d queries; want its panels' queries", len(rules))
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, repoRoot(t), nil, promtool(t), "check", "rules", file)
}

// metricName matches the names of the operator's metrics in a query
// (cmd/hook-operator's TestIntegrationMonitoringMetricsServed checks each
// one the kit uses against a running operator's /metrics).
var metricName = regexp.MustCompile(`\b(?:hook_operator|process|go)_[a-z_]+\b`)

// The kit is complete: kustomize renders the ServiceMonitor, the
// PrometheusRule and the dashboard's ConfigMap with the sidecar's label.
func TestMonitoringKustomize(t *testing.T) {
	objs := kustomize(t, monitoringDir(t))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		one(t, objs, kind)
	}
	cm := one(t, objs, "ConfigMap")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap has labels %v, want grafana_dashboard: \"1\"", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "hook-operator.json")
	if d := readDashboard(t, []byte(data)); d.UID != "hook-operator" {
		t.Errorf("the ConfigMap's dashboard has uid %q, want hook-operator", d.UID)
	}
	if used := metricName.FindAllString(data, -1); len(used) < 10 {
		t.Errorf("the dashboard queries %d metrics; want its panels' queries", len(used))
	}
}

// The chart renders no monitoring objects by default; with them on, the
// same rules, dashboard and scrape endpoints as deploy/monitoring/, and it
// refuses a ServiceMonitor and a PodMonitor at once, which would scrape
// the operator twice.
func TestHelmTemplateMonitoring(t *testing.T) {
	for _, kind := range []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"} {
		if got := only(objects(t, helmTemplate(t, "hook-operator")), kind); len(got) != 0 {
			t.Errorf("%s rendered by default", kind)
		}
	}
	objs := objects(t, helmTemplate(t, "hook-operator", "--set", "monitoring.serviceMonitor.enabled=true",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboard.enabled=true",
		"--set", "monitoring.prometheusRule.labels.release=kube-prometheus"))
	kit := kustomize(t, monitoringDir(t))
	// sameSpec compares the specs but for the selectors of the monitors,
	// which select the release's Pods (checked below).
	sameSpec := func(kind string, chartObj, kitObj *unstructured.Unstructured) {
		t.Helper()
		a, b := chartObj.DeepCopy(), kitObj.DeepCopy()
		unstructured.RemoveNestedField(a.Object, "spec", "selector")
		unstructured.RemoveNestedField(b.Object, "spec", "selector")
		if !reflect.DeepEqual(a.Object["spec"], b.Object["spec"]) {
			a, _ := yaml.Marshal(a.Object["spec"])
			b, _ := yaml.Marshal(b.Object["spec"])
			t.Errorf("the chart's %s spec differs from deploy/monitoring's (run make monitoring):\n%s\nwant:\n%s", kind, a, b)
		}
	}
	sameSpec("PrometheusRule", one(t, objs, "PrometheusRule"), one(t, kit, "PrometheusRule"))
	sameSpec("ServiceMonitor", one(t, objs, "ServiceMonitor"), one(t, kit, "ServiceMonitor"))
	pods, _, _ := unstructured.NestedStringMap(one(t, objs, "Deployment").Object, "spec", "selector", "matchLabels")
	selects := func(kind string, o *unstructured.Unstructured) {
		t.Helper()
		if got, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels"); !reflect.DeepEqual(got, pods) {
			t.Errorf("the chart's %s selects %v, want the Deployment's Pods' labels %v", kind, got, pods)
		}
	}
	selects("ServiceMonitor", one(t, objs, "ServiceMonitor"))
	if got := one(t, objs, "PrometheusRule").GetLabels()["release"]; got != "kube-prometheus" {
		t.Errorf("the PrometheusRule's labels lack monitoring.prometheusRule.labels: release = %q", got)
	}

	var dash *unstructured.Unstructured
	for _, cm := range only(objs, "ConfigMap") {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			dash = cm
		}
	}
	if dash == nil {
		t.Fatal("no ConfigMap with grafana_dashboard: \"1\"")
	}
	got, _, _ := unstructured.NestedString(dash.Object, "data", "hook-operator.json")
	want, _, _ := unstructured.NestedString(one(t, kit, "ConfigMap").Object, "data", "hook-operator.json")
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("the chart's dashboard: %v", err)
	}
	_ = json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Error("the chart's dashboard differs from deploy/monitoring/dashboard.json (run make monitoring)")
	}

	// The monitors scrape as the kit's files do: over HTTPS by default
	// (the PodMonitor with a Secret's token), over plain HTTP with
	// metrics.secure turned off.
	kitFile := func(name string) *unstructured.Unstructured {
		t.Helper()
		var o unstructured.Unstructured
		data, err := os.ReadFile(filepath.Join(monitoringDir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &o.Object); err != nil {
			t.Fatal(err)
		}
		return &o
	}
	pod := objects(t, helmTemplate(t, "hook-operator", "--set", "monitoring.podMonitor.enabled=true,monitoring.podMonitor.tokenSecret.name=hook-operator-metrics-token"))
	pm := one(t, pod, "PodMonitor")
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	sameSpec("PodMonitor", pm, kitFile("podmonitor-secure.yaml"))
	selects("PodMonitor", pm)
	if len(eps) != 1 {
		t.Errorf("PodMonitor endpoints %v", eps)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(eps[0].(map[string]any), "bearerTokenFile"); found {
		t.Error("the PodMonitor sets bearerTokenFile, which PodMonitors do not have")
	}
	plain := objects(t, helmTemplate(t, "hook-operator", "--set", "metrics.secure.enabled=false,monitoring.podMonitor.enabled=true"))
	sameSpec("PodMonitor", one(t, plain, "PodMonitor"), kitFile("podmonitor.yaml"))
	plain = objects(t, helmTemplate(t, "hook-operator", "--set", "metrics.secure.enabled=false,monitoring.serviceMonitor.enabled=true"))
	sameSpec("ServiceMonitor", one(t, plain, "ServiceMonitor"), kitFile("servicemonitor.yaml"))
	if out := helmTemplateFails(t, "--set", "monitoring.podMonitor.enabled=true"); !strings.Contains(out, "monitoring.podMonitor.tokenSecret.name") {
		t.Errorf("a secure PodMonitor without a token Secret: %s", out)
	}
	out := helmTemplateFails(t, "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.serviceMonitor.enabled=true")
	if !strings.Contains(out, "enable serviceMonitor or podMonitor, not both") {
		t.Errorf("both monitors: %s", out)
	}
}
