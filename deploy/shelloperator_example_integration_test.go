package deploy_test

import (
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

	"github.com/hook-operator/hook-operator/internal/localcerts"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The image run as shell-operator v1.20.3's example 204 runs shell-operator:
// its Deployment's variables (the Service, the configuration's name, the
// namespace, the metrics prefix of shell-operator's dashboards), its
// certificates mounted at /validating-certs/, its validating hook at
// /hooks. The listener's port is the only setting added: the test runs on
// the host's network beside other tests. The Deployment's liveness probe
// (GET /healthz over HTTPS on the webhook port, no client certificate)
// answers 200, the configuration names the example's Service, the
// operator is ready once that Service exists, and /metrics serves
// shell-operator's live_ticks under its name.
func TestIntegrationImageRunsShellOperatorExample204(t *testing.T) {
	t.Parallel()
	e := builtImage(t)
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	certs := filepath.Join(dir, "validating-certs")
	must(t, localcerts.Write(certs, "example-204-ca"))
	for _, f := range []string{"", "ca.crt", "tls.crt", "tls.key"} {
		mode := os.FileMode(0o644)
		if f == "" {
			mode = 0o755
		}
		must(t, os.Chmod(filepath.Join(certs, f), mode)) // the container's user reads them
	}
	hooks := filepath.Join(dir, "hooks")
	must(t, os.Mkdir(hooks, 0o755))
	must(t, os.WriteFile(filepath.Join(hooks, "validating.sh"), []byte(`#!/usr/bin/env bash
if [[ $1 == "--config" ]] ; then
  cat <<EOF
configVersion: v1
kubernetesValidating:
- name: nothing.example-204.example.com
  labelSelector: {matchLabels: {matches: nothing-`+ns+`}}
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
EOF
else
  echo '{"allowed": true}' > "$VALIDATING_RESPONSE_PATH"
fi
`), 0o755))
	kubeconfig := flatKubeconfig(t, c, dir)
	port := testoperator.FreePort(t)
	metrics := "127.0.0.1:" + testoperator.FreePort(t)
	service, config := "example-204-validating-svc", "example-204-"+ns
	t.Cleanup(func() {
		_, _ = kubectl(c, "delete", "validatingwebhookconfiguration", config, "--ignore-not-found")
	})
	out, err := kubectl(c, "-n", ns, "create", "service", "clusterip", service, "--tcp=443:"+port)
	must(t, errOut(err, out))

	name := "hook-operator-example-204-" + ns
	e.must(t, append(runLockedDown(name, kubeconfig),
		"-v", certs+":/validating-certs:ro", "-v", hooks+":/hooks:ro",
		"-e", "SHELL_OPERATOR_NAMESPACE="+ns, "-e", "VALIDATING_WEBHOOK_SERVICE_NAME="+service,
		"-e", "VALIDATING_WEBHOOK_CONFIGURATION_NAME="+config, "-e", "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX=shell_operator_",
		"-e", "SHELL_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "-e", "SHELL_OPERATOR_LISTEN_PORT="+strings.TrimPrefix(metrics, "127.0.0.1:"),
		"-e", "VALIDATING_WEBHOOK_LISTEN_PORT="+port, testImage)...)
	t.Cleanup(func() { _, _ = e.run(t, "rm", "-f", name) })
	logs := func() string { out, _ := e.run(t, "logs", name); return testoperator.Tail(out, 60) }

	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	waitFor(t, "the example's liveness probe answered 200", 90*time.Second, func() bool {
		resp, err := probe.Get("https://127.0.0.1:" + port + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, logs)
	waitFor(t, "ready", 60*time.Second, func() bool { code, _ := get("http://" + metrics + "/readyz"); return code == http.StatusOK }, logs)
	out, err = kubectl(c, "get", "validatingwebhookconfiguration", config, "-o", "jsonpath={.webhooks[0].clientConfig.service.namespace}/{.webhooks[0].clientConfig.service.name}")
	if err != nil || out != ns+"/"+service {
		t.Errorf("the registered configuration's Service: %q, %v; want %s/%s", out, err, ns, service)
	}
	if _, page := get("http://" + metrics + "/metrics"); !strings.Contains(page, "\nshell_operator_live_ticks ") {
		t.Errorf("/metrics does not serve shell_operator_live_ticks:\n%s", testoperator.Tail(page, 20))
	}
	if l := logs(); strings.Contains(l, "webhook registration:") {
		t.Errorf("a warning about the registration, with the Service there:\n%s", l)
	}
}

// kubectl runs kubectl on c's cluster and returns its output.
func kubectl(c *testcluster.Cluster, args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// errOut adds a command's output to its error.
func errOut(err error, out string) error {
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}
