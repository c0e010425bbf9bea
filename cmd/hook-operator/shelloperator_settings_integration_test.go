package main_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/localcluster"
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
		configName: "shell-operator-hooks-" + ns, metricsPort: freePort(t)}
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

// args are the settings as a Deployment's args give them.
func (s *shellOperatorSettings) args() []string {
	return []string{"--hooks-dir=" + s.hooks, "--tmp-dir=" + filepath.Join(s.certs, "tmp"),
		"--listen-address=127.0.0.1", "--listen-port=" + s.metricsPort, "--prometheus-metrics-prefix=shell_operator_",
		"--namespace=" + s.ns, "--kube-config=" + s.kubeconfig, "--kube-server=" + s.server, "--kube-client-qps=50", "--kube-client-burst=100",
		"--object-patcher-kube-client-qps=5", "--object-patcher-kube-client-burst=10", "--object-patcher-kube-client-timeout=10s",
		"--log-level=info", "--log-type=json", "--log-no-time", "--log-proxy-hook-json", "--debug-keep-tmp-files",
		"--debug-unix-socket=" + s.socket, "--validating-webhook-configuration-name=" + s.configName,
		"--validating-webhook-service-name=shell-operator-validating-svc",
		"--validating-webhook-server-cert=" + filepath.Join(s.certs, "tls.crt"), "--validating-webhook-server-key=" + filepath.Join(s.certs, "tls.key"),
		"--validating-webhook-ca=" + filepath.Join(s.certs, "ca.crt"), "--validating-webhook-failure-policy=Ignore",
		"--validating-webhook-listen-address=127.0.0.1", "--validating-webhook-listen-port=" + s.webhookPort}
}

// env are the same settings as a Deployment's env gives them.
func (s *shellOperatorSettings) env() []string {
	return []string{"SHELL_OPERATOR_HOOKS_DIR=" + s.hooks, "SHELL_OPERATOR_TMP_DIR=" + filepath.Join(s.certs, "tmp"),
		"SHELL_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "SHELL_OPERATOR_LISTEN_PORT=" + s.metricsPort,
		"SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX=shell_operator_", "SHELL_OPERATOR_NAMESPACE=" + s.ns,
		"KUBE_CONFIG=" + s.kubeconfig, "KUBE_SERVER=" + s.server, "KUBE_CLIENT_QPS=50", "KUBE_CLIENT_BURST=100",
		"OBJECT_PATCHER_KUBE_CLIENT_QPS=5", "OBJECT_PATCHER_KUBE_CLIENT_BURST=10", "OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT=10s",
		"LOG_LEVEL=info", "LOG_TYPE=json", "LOG_NO_TIME=true", "LOG_PROXY_HOOK_JSON=true", "DEBUG_KEEP_TMP_FILES=true",
		"DEBUG_UNIX_SOCKET=" + s.socket, "VALIDATING_WEBHOOK_CONFIGURATION_NAME=" + s.configName,
		"VALIDATING_WEBHOOK_SERVICE_NAME=shell-operator-validating-svc",
		"VALIDATING_WEBHOOK_SERVER_CERT=" + filepath.Join(s.certs, "tls.crt"), "VALIDATING_WEBHOOK_SERVER_KEY=" + filepath.Join(s.certs, "tls.key"),
		"VALIDATING_WEBHOOK_CA=" + filepath.Join(s.certs, "ca.crt"), "VALIDATING_WEBHOOK_FAILURE_POLICY=Ignore",
		"VALIDATING_WEBHOOK_LISTEN_ADDRESS=127.0.0.1", "VALIDATING_WEBHOOK_LISTEN_PORT=" + s.webhookPort}
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

// freePort returns a port that was free a moment ago
// (localcluster.FreePort: out of the range that port 0 draws from).
func freePort(t *testing.T) string {
	t.Helper()
	port, err := localcluster.FreePort()
	must(t, err)
	return port
}
