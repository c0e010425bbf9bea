package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The live test's Prometheus scrapes and evaluates every second, and every
// alert's `for:` is shortened to liveFor: several evaluations, so that an
// alert is pending before it fires, and short enough to fire within the
// test. Nothing else of the shipped rules is changed.
const (
	liveInterval = time.Second
	liveFor      = 5 * time.Second
	// liveRateInterval stands for the dashboard's $__rate_interval: a
	// window that holds the whole test, as in TestMonitoringDashboardQueries
	// (deploy).
	liveRateInterval = "5m"
)

// A real Prometheus (the server of the module that pins promtool) scrapes
// two operators with --metrics-secure as deploy/monitoring's ServiceMonitor
// says (HTTPS, a ServiceAccount's bearer token bound to the kit's
// metrics-reader ClusterRole, the certificate not verified) and evaluates
// the shipped alerts (their `for:` shortened). The operator whose hook
// fails fires HookOperatorHookFailing; the healthy one fires nothing, not
// even pending, in the whole run; every rule evaluates without error; and
// every query of the dashboard, its variables replaced, returns data.
func TestIntegrationMonitoringLivePrometheus(t *testing.T) {
	t.Parallel()
	promBin := prometheusBinary(t)
	w := newWebhookTest(t)
	c := w.c
	healthyNS := c.Namespace(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	token := prometheusToken(t, c, w.ns)
	must(t, os.WriteFile(tokenFile, []byte(token), 0o600))

	// Prometheus runs first, as in a cluster, so that it sees the
	// operators' counters from their start.
	failingAddr, healthyAddr := "127.0.0.1:"+testoperator.FreePort(t), "127.0.0.1:"+testoperator.FreePort(t)
	p := startPrometheus(t, promBin, dir, map[string]any{
		"global":     map[string]any{"scrape_interval": liveInterval.String(), "evaluation_interval": liveInterval.String()},
		"rule_files": []string{liveRules(t, dir)},
		"scrape_configs": []any{serviceMonitorScrapeConfig(t, tokenFile,
			liveTarget{addr: failingAddr, namespace: w.ns, pod: "hook-operator-op-1"},
			liveTarget{addr: healthyAddr, namespace: healthyNS, pod: "hook-operator-healthy-1"})},
	})
	failing := startKitOperator(t, w, "--metrics-secure", "--metrics-secure-address", failingAddr)
	healthy := startHealthyOperator(t, w.bin, c, healthyNS, healthyAddr)
	logs := func() string {
		return "targets: " + p.targetsSummary(t) + "\nfiring or pending: " + p.alertsSummary(t)
	}

	waitSlowly(t, "both operators scraped (up == 1)", func() bool {
		return len(p.query(t, `up{job="hook-operator-metrics"} == 1`)) == 2
	}, logs)

	waitSlowly(t, "HookOperatorHookFailing firing for fail.sh in "+w.ns, func() bool {
		failing.poke()
		return slices.ContainsFunc(p.alerts(t), func(a promAlert) bool {
			return a.State == "firing" && a.Labels["alertname"] == "HookOperatorHookFailing" &&
				a.Labels["namespace"] == w.ns && a.Labels["hook"] == "fail.sh"
		})
	}, logs)

	queries := dashboardQueries(t, w.ns)
	var empty []string
	waitSlowly(t, "data for every query of the dashboard", func() bool {
		failing.poke()
		empty = empty[:0]
		for _, q := range queries {
			if !hasNumber(p.query(t, q)) {
				empty = append(empty, q)
			}
		}
		return len(empty) == 0
	}, func() string { return "no data:\n  " + strings.Join(empty, "\n  ") + "\n" + logs() })
	// The dashboard's variable $namespace lists the namespaces of
	// hook_operator_live_ticks_total, as Grafana asks for them.
	if ns := p.labelValues(t, "namespace", "hook_operator_live_ticks_total"); !slices.Contains(ns, w.ns) {
		t.Errorf("label_values(hook_operator_live_ticks_total, namespace) = %v, want %s among them", ns, w.ns)
	}

	// The healthy operator ran its hook and was scraped for three times
	// liveFor, every rule evaluated all along: an alert about it would
	// have fired by now. Pending is not enough: a replica is a standby
	// until it takes the Lease, so a scrape in its first second may see
	// hook_operator_leader 0 and HookOperatorNoLeader pend, which its
	// `for:` exists to absorb.
	scrapes := int(3 * liveFor / liveInterval)
	waitSlowly(t, fmt.Sprintf("%d scrapes of the healthy operator after its first run", scrapes), func() bool {
		return hasNumber(p.query(t, fmt.Sprintf(`count_over_time(hook_operator_hook_runs_total{namespace=%q,hook="ok.sh"}[10m]) >= %d`, healthyNS, scrapes)))
	}, logs)
	if got := p.query(t, fmt.Sprintf(`count_over_time(ALERTS{namespace=%q,alertstate="firing"}[10m])`, healthyNS)); len(got) != 0 {
		t.Errorf("the healthy operator had alerts firing: %v", got)
	}
	for _, a := range p.alerts(t) {
		if ns := a.Labels["namespace"]; ns != w.ns {
			t.Errorf("alert %s (%s) has namespace %q, want only %s's (%s is healthy)", a.Labels["alertname"], a.State, ns, w.ns, healthyNS)
		}
	}
	for _, r := range p.rules(t) {
		if r.Health != "ok" {
			t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
		}
	}
	t.Logf("alerts pending or firing (all %s's): %s", w.ns, p.alertsSummary(t))

	for who, l := range map[string]string{"prometheus": p.logs.String(), "the failing operator": failing.logs.String(), "the healthy operator": healthy.logs.String()} {
		if strings.Contains(l, token) {
			t.Errorf("the log of %s holds Prometheus's token", who)
		}
	}
}

// prometheusBinary returns the Prometheus server of the pinned module,
// built by hack/tools/prometheus.sh into the per-user cache the first time
// (a few minutes), found there afterwards.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	return testcluster.ToolBinary(t, "prometheus.sh")
}

// startHealthyOperator starts an operator in ns with leader election
// (identity healthy-1), sharding and --metrics-secure on metricsAddr, whose
// one hook succeeds on every change of a ConfigMap of ns; it changes one.
func startHealthyOperator(t *testing.T, bin string, c *testcluster.Cluster, ns, metricsAddr string) *observed {
	t.Helper()
	hooks := t.TempDir()
	writeHook(t, hooks, "ok.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}}}]}`, "exit 0\n"))
	o := startOperator(t, hooks, operatorOpts{flags: append(electionArgs(ns, "healthy-1"), "--sharding", "--metrics-secure", "--metrics-secure-address", metricsAddr)})
	out, err := kubectlApply(c.Kubeconfig, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: healthy, namespace: "+ns+"}\ndata: {value: one}\n")
	must(t, errWith(err, out))
	return o
}

// prometheusToken makes the ServiceAccount "prometheus" in ns, with the
// rights deploy/metrics-secure gives a scraper (its ClusterRole
// hook-operator-metrics-reader, bound as reader-binding.yaml binds it, both
// renamed for the test), and returns a token of it (TokenRequest), as the
// kubelet mounts one in Prometheus's Pod.
func prometheusToken(t *testing.T, c *testcluster.Cluster, ns string) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must(t, err)
	kit := filepath.Join(root, "deploy", "metrics-secure")
	var role rbacv1.ClusterRole
	data, err := os.ReadFile(filepath.Join(kit, "rbac.yaml"))
	must(t, err)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.ClusterRole
		must(t, yaml.Unmarshal([]byte(doc), &r))
		if r.Kind == "ClusterRole" && r.Name == "hook-operator-metrics-reader" {
			role = r
		}
	}
	if role.Name == "" {
		t.Fatalf("%s has no ClusterRole hook-operator-metrics-reader", filepath.Join(kit, "rbac.yaml"))
	}
	var binding rbacv1.ClusterRoleBinding
	data, err = os.ReadFile(filepath.Join(kit, "reader-binding.yaml"))
	must(t, err)
	must(t, yaml.Unmarshal(data, &binding))
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "ServiceAccount" {
		t.Fatalf("reader-binding.yaml binds %v to %s, want one ServiceAccount to %s", binding.Subjects, binding.RoleRef.Name, role.Name)
	}

	name := role.Name + "-" + ns
	role.ObjectMeta = metav1.ObjectMeta{Name: name}
	binding.ObjectMeta = metav1.ObjectMeta{Name: name}
	binding.RoleRef.Name = name
	binding.Subjects[0].Name, binding.Subjects[0].Namespace = "prometheus", ns
	grantClusterRole(t, c, &role, &binding)
	return serviceAccountToken(t, c, ns, "prometheus")
}

// monitoringFile returns the content of deploy/monitoring/name, the kit
// the tests hold to what it ships.
func monitoringFile(t *testing.T, name string) []byte {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must(t, err)
	data, err := os.ReadFile(filepath.Join(root, "deploy", "monitoring", name))
	must(t, err)
	return data
}

// liveRules writes the shipped alerts (deploy/monitoring/alerts.yaml) into
// dir with each `for:` set to liveFor, and returns the file's path.
func liveRules(t *testing.T, dir string) string {
	t.Helper()
	data := monitoringFile(t, "alerts.yaml")
	var file struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	must(t, yaml.Unmarshal(data, &file))
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			if _, ok := r["for"]; ok {
				r["for"] = liveFor.String()
			}
		}
	}
	if n < 10 {
		t.Fatalf("alerts.yaml has %d rules; want the kit's alerts", n)
	}
	out, err := yaml.Marshal(file)
	must(t, err)
	path := filepath.Join(dir, "alerts.yaml")
	must(t, os.WriteFile(path, out, 0o600))
	return path
}

// A liveTarget is an operator's secure metrics address and the labels the
// Prometheus Operator gives the target of its Pod.
type liveTarget struct{ addr, namespace, pod string }

// serviceMonitorScrapeConfig returns the scrape config the Prometheus
// Operator makes of deploy/monitoring/servicemonitor-secure.yaml's
// endpoint, for targets found by the Service instead of listed: its scheme,
// path and TLS settings as they are, the Pod's ServiceAccount token file
// replaced by tokenFile, its interval by liveInterval; the job is the
// Service's name, and each target has the namespace, pod, service,
// endpoint and container labels that the dashboard selects by. A setting
// of the endpoint this does not know fails the test, so that the scrape
// cannot differ silently from what users get.
func serviceMonitorScrapeConfig(t *testing.T, tokenFile string, targets ...liveTarget) map[string]any {
	t.Helper()
	data := monitoringFile(t, "servicemonitor-secure.yaml")
	var sm struct {
		Spec struct {
			Endpoints []map[string]any `json:"endpoints"`
		} `json:"spec"`
	}
	must(t, yaml.Unmarshal(data, &sm))
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("servicemonitor-secure.yaml has %d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	const service = "hook-operator-metrics"
	cfg := map[string]any{"job_name": service, "scrape_interval": liveInterval.String()}
	var port string
	for key, v := range sm.Spec.Endpoints[0] {
		switch key {
		case "port":
			port = fmt.Sprint(v)
		case "interval":
		case "path":
			cfg["metrics_path"] = v
		case "scheme":
			cfg["scheme"] = v
		case "bearerTokenFile":
			cfg["authorization"] = map[string]any{"type": "Bearer", "credentials_file": tokenFile}
		case "tlsConfig":
			tls := map[string]any{}
			for k, v := range v.(map[string]any) {
				if k != "insecureSkipVerify" {
					t.Fatalf("servicemonitor-secure.yaml's tlsConfig sets %s, which this test does not translate: add it", k)
				}
				tls["insecure_skip_verify"] = v
			}
			cfg["tls_config"] = tls
		default:
			t.Fatalf("servicemonitor-secure.yaml's endpoint sets %s, which this test does not translate: add it", key)
		}
	}
	var static []any
	for _, tg := range targets {
		static = append(static, map[string]any{"targets": []string{tg.addr}, "labels": map[string]string{
			"namespace": tg.namespace, "pod": tg.pod, "service": service, "endpoint": port, "container": "hook-operator"}})
	}
	cfg["static_configs"] = static
	return cfg
}

// dashboardQueries returns the expressions of deploy/monitoring's
// dashboard with its variables replaced: $namespace by ns,
// $__rate_interval by liveRateInterval.
func dashboardQueries(t *testing.T, ns string) []string {
	t.Helper()
	data := monitoringFile(t, "dashboard.json")
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	must(t, json.Unmarshal(data, &dash))
	vars := strings.NewReplacer("$namespace", ns, "$__rate_interval", liveRateInterval)
	var out []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, vars.Replace(tg.Expr))
		}
	}
	if len(out) < 10 {
		t.Fatalf("the dashboard has %d queries; want its panels'", len(out))
	}
	return out
}

// A promServer is a running Prometheus and its HTTP API.
type promServer struct {
	url  string
	logs *testoperator.Buffer
}

// startPrometheus starts the Prometheus server bin with config (written
// into dir, its storage there too) on a free local port, stops it when the
// test ends, and waits until it is ready.
func startPrometheus(t *testing.T, bin, dir string, config map[string]any) *promServer {
	t.Helper()
	data, err := yaml.Marshal(config)
	must(t, err)
	path := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(path, data, 0o600))
	p := &promServer{url: "http://127.0.0.1:" + testoperator.FreePort(t), logs: &testoperator.Buffer{}}
	cmd := exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(p.url, "http://"))
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", p.logs.String())
		}
	})
	waitUntil(t, "prometheus ready", func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, p.logs.String)
	return p
}

// waitSlowly is waitUntil for conditions that send Prometheus many
// queries (and change objects): it checks cond every half second, and
// fails the test with diag's answer after 90 s.
func waitSlowly(t *testing.T, what string, cond func() bool, diag func() string) {
	t.Helper()
	poll.Every(t, 500*time.Millisecond, 90*time.Second, what, cond, diag)
}

// api GETs path of the HTTP API with params and decodes its data into out.
func (p *promServer) api(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	resp, err := http.Get(p.url + path + "?" + params.Encode())
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Status != "success" {
		t.Fatalf("GET %s %v: %d %s", path, params, resp.StatusCode, body)
	}
	must(t, json.Unmarshal(answer.Data, out))
}

// A promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query returns the instant vector expr evaluates to now.
func (p *promServer) query(t *testing.T, expr string) []promSample {
	t.Helper()
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	p.api(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	if data.ResultType != "vector" {
		t.Fatalf("query %s: a %s, want a vector", expr, data.ResultType)
	}
	return data.Result
}

// hasNumber says whether a sample's value is a number (a panel draws it),
// not NaN (what histogram_quantile gives without observations).
func hasNumber(samples []promSample) bool {
	return slices.ContainsFunc(samples, func(s promSample) bool {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		return err == nil && !math.IsNaN(v)
	})
}

// labelValues returns the values of label among the series of match, as
// Grafana's label_values(match, label) asks for them.
func (p *promServer) labelValues(t *testing.T, label, match string) []string {
	t.Helper()
	var values []string
	p.api(t, "/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &values)
	return values
}

// A promAlert is an alert pending or firing.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (p *promServer) alerts(t *testing.T) []promAlert {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	p.api(t, "/api/v1/alerts", nil, &data)
	return data.Alerts
}

// alertsSummary lists the alerts pending or firing as name{namespace,
// hook} state.
func (p *promServer) alertsSummary(t *testing.T) string {
	t.Helper()
	var out []string
	for _, a := range p.alerts(t) {
		out = append(out, fmt.Sprintf("%s{namespace=%s,hook=%s} %s", a.Labels["alertname"], a.Labels["namespace"], a.Labels["hook"], a.State))
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ", ")
}

// A promRule is an alerting rule as Prometheus evaluates it.
type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p *promServer) rules(t *testing.T) []promRule {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	p.api(t, "/api/v1/rules", nil, &data)
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// targetsSummary lists each target's scrape URL, health and last error.
func (p *promServer) targetsSummary(t *testing.T) string {
	t.Helper()
	var data struct {
		ActiveTargets []struct {
			ScrapeURL string `json:"scrapeUrl"`
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	p.api(t, "/api/v1/targets", nil, &data)
	var out []string
	for _, tg := range data.ActiveTargets {
		out = append(out, fmt.Sprintf("%s %s %s", tg.ScrapeURL, tg.Health, tg.LastError))
	}
	return strings.Join(out, "; ")
}
