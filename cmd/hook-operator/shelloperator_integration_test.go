package main_test

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// A shell-operator v1.20.3 Deployment's args, or its env, start the
// operator unchanged (issue 44): every setting is shell-operator's own
// flag or variable, in its formats (a host and a port apart, --log-type,
// --kube-server over a kubeconfig whose server is wrong, a repeated
// --validating-webhook-client-ca), and each takes effect: the metrics on
// its host and port under its prefix, its debug socket, its webhook
// configuration name, Service, namespace, certificate and port. Its
// settings that map to nothing are accepted with one warning each. The
// one variable of ours, HOOK_OPERATOR_HEALTH_LISTEN_ADDRESS, keeps the
// probe port off the shared host (tests run in parallel).
func TestIntegrationShellOperatorDeploymentStarts(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	bin := testoperator.Binary(t)
	for _, form := range []string{"args", "env"} {
		t.Run(form, func(t *testing.T) {
			ns := c.Namespace(t)
			s := shellOperatorSetup(t, c.Kubeconfig, ns)
			cmd := exec.Command(bin, "start")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOK_OPERATOR_HEALTH_LISTEN_ADDRESS=127.0.0.1:0"}
			if form == "args" {
				cmd.Args = append(cmd.Args, s.args()...)
			} else {
				cmd.Env = append(cmd.Env, s.env()...)
			}
			// Registered first, so that it runs after the operator has stopped.
			t.Cleanup(func() {
				_, _ = exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "delete", "validatingwebhookconfiguration", s.configName, "--ignore-not-found").CombinedOutput()
			})
			logs := &testoperator.Buffer{}
			startLogged(t, cmd, logs)
			waitUntil(t, "the hooks' first runs", func() bool { return strings.Contains(logs.String(), "all bindings started") }, logs.String)
			waitUntil(t, "the metrics on shell-operator's host and port, its own under its prefix", func() bool {
				code, page := fetch(http.DefaultClient, "http://127.0.0.1:"+s.metricsPort+"/metrics", "")
				return code == 200 && strings.Contains(page, "\nshell_operator_hook_run_success_total{") && strings.Contains(page, "\nhook_operator_hook_runs_total{")
			}, logs.String)
			if _, err := os.Stat(s.socket); err != nil {
				t.Errorf("the debug socket of --debug-unix-socket: %v", err)
			}
			if strings.Contains(logs.String(), `"time":`) || !strings.HasPrefix(logs.String(), "{") {
				t.Errorf("--log-type=json --log-no-time: want JSON lines without time:\n%.300s", logs.String())
			}
			for _, name := range []string{"--log-proxy-hook-json", "--debug-keep-tmp-files", "--object-patcher-kube-client-timeout"} {
				if form == "env" {
					name = map[string]string{"--log-proxy-hook-json": "LOG_PROXY_HOOK_JSON", "--debug-keep-tmp-files": "DEBUG_KEEP_TMP_FILES",
						"--object-patcher-kube-client-timeout": "OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT"}[name]
				}
				if n := strings.Count(logs.String(), "shell-operator's "+name+": accepted but not taken"); n != 1 {
					t.Errorf("%d warnings for %s, want 1", n, name)
				}
			}
			s.checkWebhook(t, c.Kubeconfig)
		})
	}
}

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
	addr := "127.0.0.1:" + testoperator.FreePort(t)
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

// The three metrics shell-operator v1.20 serves about kubernetes bindings
// are served under its prefix by a running operator: after start-up, the
// time each hook's bindings took to list (within the time start-up took),
// binding_monitor_missing_total at 0 for each binding, and
// factory_informer_dead_total counting the watch of a quiet namespace
// that went idle (no event and no bookmark for --watch-idle-timeout) and
// was listed again.
func TestIntegrationShellOperatorBindingMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inNs := `"namespace":{"nameSelector":{"matchNames":["` + h.ns + `"]}}`
	h.hook(t, "two.sh", bashHook(`{"configVersion":"v1","kubernetes":[`+
		`{"name":"cms","kind":"ConfigMap",`+inNs+`},`+
		`{"name":"secrets","kind":"Secret",`+inNs+`,"includeSnapshotsFrom":["cms"]}]}`, ""))
	began := time.Now()
	o := h.start(t, "--metrics-prefix", "shell_operator_", "--watch-idle-timeout", "2s")
	o.waitReady(t)
	startup := time.Since(began).Seconds()

	if v := o.metric(t, `shell_operator_hook_enable_kubernetes_bindings_seconds{hook="two.sh"}`); v <= 0 || v > startup {
		t.Errorf("hook_enable_kubernetes_bindings_seconds = %v, want above 0 and within start-up's %.2fs", v, startup)
	}
	for _, b := range []string{"cms", "secrets"} {
		if v := o.metric(t, `shell_operator_binding_monitor_missing_total{binding="`+b+`",hook="two.sh"}`); v != 0 {
			t.Errorf("binding_monitor_missing_total of %s = %v, want 0 (served, at 0)", b, v)
		}
	}
	dead := `shell_operator_factory_informer_dead_total{gvr="/v1, Resource=configmaps",namespace="` + h.ns + `"}`
	if v := o.metric(t, dead); v < 0 {
		t.Fatalf("%s not served", dead)
	}
	// Nothing changes in the namespace: its watches go idle after 2 s,
	// before the API server's next bookmark (about a minute).
	o.waitFor(t, "an idle watch counted as a dead informer", func() bool { return o.metric(t, dead) >= 1 })
}

// shellOperatorSettings is one operator's shell-operator settings.
type shellOperatorSettings struct {
	hooks, kubeconfig, server, ns, socket, certs, configName string
	metricsPort, webhookPort                                 string
}

// shellOperatorSetup writes hooks (an onStartup hook and a validating one
// matching nothing), a kubeconfig whose server is wrong (--kube-server
// gives the right one), and the webhook certificates.
func shellOperatorSetup(t *testing.T, kubeconfig, ns string) *shellOperatorSettings {
	t.Helper()
	s := &shellOperatorSettings{hooks: t.TempDir(), ns: ns, socket: filepath.Join(t.TempDir(), "debug.socket"),
		configName: "shell-operator-hooks-" + ns, metricsPort: testoperator.FreePort(t)}
	writeHook(t, s.hooks, "startup.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "exit 0\n"))
	writeHook(t, s.hooks, "validate.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"nothing.shell-operator-settings.example.com",
"labelSelector":{"matchLabels":{"matches":"nothing-`+ns+`"}},
"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`,
		`echo '{"allowed":true}' >"$VALIDATING_RESPONSE_PATH"`+"\n"))
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	must(t, err)
	for _, cl := range cfg.Clusters {
		s.server, cl.Server = cl.Server, "https://127.0.0.1:1"
	}
	s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, s.kubeconfig))
	_, s.certs, s.webhookPort = servingSetup(t)
	return s
}

// flag is one shell-operator setting as a Deployment's args and its env
// give it: a flag and a variable with the same value; an empty value is a
// boolean flag, and "true" as a variable.
type flag struct{ name, env, value string }

// flags are the settings, in both forms.
func (s *shellOperatorSettings) flags() []flag {
	return []flag{
		{"--hooks-dir", "SHELL_OPERATOR_HOOKS_DIR", s.hooks},
		{"--tmp-dir", "SHELL_OPERATOR_TMP_DIR", filepath.Join(s.certs, "tmp")},
		{"--listen-address", "SHELL_OPERATOR_LISTEN_ADDRESS", "127.0.0.1"},
		{"--listen-port", "SHELL_OPERATOR_LISTEN_PORT", s.metricsPort},
		{"--prometheus-metrics-prefix", "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX", "shell_operator_"},
		{"--namespace", "SHELL_OPERATOR_NAMESPACE", s.ns},
		{"--kube-config", "KUBE_CONFIG", s.kubeconfig},
		{"--kube-server", "KUBE_SERVER", s.server},
		{"--kube-client-qps", "KUBE_CLIENT_QPS", "50"},
		{"--kube-client-burst", "KUBE_CLIENT_BURST", "100"},
		{"--object-patcher-kube-client-qps", "OBJECT_PATCHER_KUBE_CLIENT_QPS", "5"},
		{"--object-patcher-kube-client-burst", "OBJECT_PATCHER_KUBE_CLIENT_BURST", "10"},
		{"--object-patcher-kube-client-timeout", "OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT", "10s"},
		{"--log-level", "LOG_LEVEL", "info"},
		{"--log-type", "LOG_TYPE", "json"},
		{"--log-no-time", "LOG_NO_TIME", ""},
		{"--log-proxy-hook-json", "LOG_PROXY_HOOK_JSON", ""},
		{"--debug-keep-tmp-files", "DEBUG_KEEP_TMP_FILES", ""},
		{"--debug-unix-socket", "DEBUG_UNIX_SOCKET", s.socket},
		{"--validating-webhook-configuration-name", "VALIDATING_WEBHOOK_CONFIGURATION_NAME", s.configName},
		{"--validating-webhook-service-name", "VALIDATING_WEBHOOK_SERVICE_NAME", "shell-operator-validating-svc"},
		{"--validating-webhook-server-cert", "VALIDATING_WEBHOOK_SERVER_CERT", filepath.Join(s.certs, "tls.crt")},
		{"--validating-webhook-server-key", "VALIDATING_WEBHOOK_SERVER_KEY", filepath.Join(s.certs, "tls.key")},
		{"--validating-webhook-ca", "VALIDATING_WEBHOOK_CA", filepath.Join(s.certs, "ca.crt")},
		{"--validating-webhook-failure-policy", "VALIDATING_WEBHOOK_FAILURE_POLICY", "Ignore"},
		{"--validating-webhook-listen-address", "VALIDATING_WEBHOOK_LISTEN_ADDRESS", "127.0.0.1"},
		{"--validating-webhook-listen-port", "VALIDATING_WEBHOOK_LISTEN_PORT", s.webhookPort},
	}
}

// args are the settings as a Deployment's args give them.
func (s *shellOperatorSettings) args() []string {
	var args []string
	for _, f := range s.flags() {
		if f.value == "" {
			args = append(args, f.name)
		} else {
			args = append(args, f.name+"="+f.value)
		}
	}
	return args
}

// env are the same settings as a Deployment's env gives them.
func (s *shellOperatorSettings) env() []string {
	var env []string
	for _, f := range s.flags() {
		env = append(env, f.env+"="+cmp.Or(f.value, "true"))
	}
	return env
}

// checkWebhook: the configuration has shell-operator's name, Service,
// namespace, CA and failure policy, and the listener on its port serves
// the certificate its CA signed.
func (s *shellOperatorSettings) checkWebhook(t *testing.T, kubeconfig string) {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "get", "validatingwebhookconfiguration", s.configName, "-o",
		"jsonpath={.webhooks[0].clientConfig.service.name}/{.webhooks[0].clientConfig.service.namespace} {.webhooks[0].failurePolicy}").CombinedOutput()
	if want := "shell-operator-validating-svc/" + s.ns + " Ignore"; err != nil || string(out) != want {
		t.Errorf("the ValidatingWebhookConfiguration %s: %q, %v; want %q", s.configName, out, err, want)
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+s.webhookPort, &tls.Config{RootCAs: caPool(t, s.certs), ServerName: "127.0.0.1"})
	if err != nil {
		t.Errorf("the webhook listener on shell-operator's port %s: %v", s.webhookPort, err)
		return
	}
	conn.Close()
}

// caPool holds the CA of the certificates in certs (servingSetup's
// ca.crt).
func caPool(t *testing.T, certs string) *x509.CertPool {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return pool
}
