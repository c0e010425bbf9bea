package main_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The environment of shell-operator v1.20.3's example Deployments 204
// (validating) and 210 (conversion), as their manifests set it, with what
// a binary outside their image needs besides: the certificates' files and
// the listeners' ports (the image has them at /validating-certs/ and
// /conversion-certs/, on 9680 and 9681), and the Pod's name for Events.
// Their liveness probe, GET /healthz over HTTPS on the webhook port,
// answers 200 without a client certificate. The Service their manifests
// name does not exist here at first: the operator says so (a warning
// naming the Service and what to set, an Event on its Pod, /readyz), and
// once the Service is made it is ready.
func TestIntegrationShellOperatorExampleDeployments(t *testing.T) {
	t.Parallel()
	for _, example := range []string{"204", "210"} {
		t.Run(example, func(t *testing.T) {
			t.Parallel()
			w := newWebhookTest(t)
			ns, hooks := w.ns, t.TempDir()
			service := "example-" + example + "-webhook-" + ns
			env := []string{"SHELL_OPERATOR_NAMESPACE=" + ns, "POD_NAMESPACE=" + ns, "POD_NAME=shell-operator-" + example}
			prefix := "VALIDATING_WEBHOOK_"
			if example == "204" {
				writeHook(t, hooks, "validating.sh", bashHook(`{"configVersion":"v1","kubernetesValidating":[{"name":"nothing.example-204.example.com",
"labelSelector":{"matchLabels":{"matches":"nothing-`+ns+`"}},
"rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}]}`,
					`echo '{"allowed":true}' >"$VALIDATING_RESPONSE_PATH"`+"\n"))
				env = append(env, "VALIDATING_WEBHOOK_SERVICE_NAME="+service, "VALIDATING_WEBHOOK_CONFIGURATION_NAME=example-204-"+ns)
				t.Cleanup(func() {
					_, _ = exec.Command("kubectl", "--kubeconfig", w.c.Kubeconfig, "delete", "validatingwebhookconfiguration", "example-204-"+ns, "--ignore-not-found").CombinedOutput()
				})
			} else {
				group := ns + ".example-210.example.com"
				crd := w.installCRD(t, group, "crontabs", "CronTab", "v1alpha1", "v1")
				writeHook(t, hooks, "conversion.sh", bashHook(`{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"alpha_to_v1","crdName":"`+crd+`",
"conversions":[{"fromVersion":"`+group+`/v1alpha1","toVersion":"`+group+`/v1"}]}]}`,
					`jq '{convertedObjects: [.[0].review.request.objects[] | .apiVersion = "`+group+`/v1"]}' "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"`+"\n"))
				env = append(env, "CONVERSION_WEBHOOK_SERVICE_NAME="+service)
				prefix = "CONVERSION_WEBHOOK_"
			}
			env = append(env, prefix+"SERVER_CERT="+filepath.Join(w.certs, "tls.crt"), prefix+"SERVER_KEY="+filepath.Join(w.certs, "tls.key"),
				prefix+"CA="+filepath.Join(w.certs, "ca.crt"), prefix+"LISTEN_ADDRESS=127.0.0.1", prefix+"LISTEN_PORT="+w.port)
			o := startOperator(t, hooks, operatorOpts{env: env})

			o.waitFor(t, "the liveness probe of the example's Deployment answered", func() bool {
				return probeWebhook(t, w.certs, w.port) == http.StatusOK
			})
			want := "reviews are registered through the Service " + ns + "/" + service + ", which does not exist"
			o.waitLog(t, want)
			if !strings.Contains(o.logs.String(), "set --"+map[string]string{"204": "webhook", "210": "conversion-webhook"}[example]+"-service-name (shell-operator's "+prefix+"SERVICE_NAME)") {
				t.Errorf("the warning does not say what to set:\n%s", o.logs.String())
			}
			if code, body := o.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
				t.Errorf("/readyz while the Service is missing: %d %q, want 503 naming it", code, body)
			}
			o.waitFor(t, "a WebhookUnreachable Event on the operator's Pod", func() bool {
				out, _ := exec.Command("kubectl", "--kubeconfig", w.c.Kubeconfig, "-n", ns, "get", "events", "--field-selector",
					"involvedObject.kind=Pod,involvedObject.name=shell-operator-"+example+",reason=WebhookUnreachable", "-o", "jsonpath={.items[*].message}").CombinedOutput()
				return strings.Contains(string(out), want)
			})

			w.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: %s}
spec:
  ports: [{port: 443, targetPort: %s}]
`, service, ns, w.port))
			o.waitFor(t, "ready once the Service is there", func() bool {
				code, _ := o.get(t, "/readyz")
				return code == http.StatusOK && strings.Contains(o.logs.String(), "the registrations reach the listeners again")
			})
		})
	}
}

// A conversion registered by --webhook-url, whose port is the admission
// listener's while shell-operator's CONVERSION_WEBHOOK_LISTEN_PORT starts a
// second listener for conversions, is reported with the URL to set.
func TestIntegrationConversionURLOfAnotherListener(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	ns := w.ns
	group := ns + ".conversion-url.example.com"
	crd := w.installCRD(t, group, "crontabs", "CronTab", "v1alpha1", "v1")
	w.hook(t, "conversion.sh", bashHook(`{"configVersion":"v1","kubernetesCustomResourceConversion":[{"name":"alpha_to_v1","crdName":"`+crd+`",
"conversions":[{"fromVersion":"`+group+`/v1alpha1","toVersion":"`+group+`/v1"}]}]}`, "exit 1\n"))
	conversionPort := testoperator.FreePort(t)
	env := []string{"CONVERSION_WEBHOOK_LISTEN_ADDRESS=127.0.0.1", "CONVERSION_WEBHOOK_LISTEN_PORT=" + conversionPort,
		"CONVERSION_WEBHOOK_SERVER_CERT=" + filepath.Join(w.certs, "tls.crt"), "CONVERSION_WEBHOOK_SERVER_KEY=" + filepath.Join(w.certs, "tls.key"),
		"CONVERSION_WEBHOOK_CA=" + filepath.Join(w.certs, "ca.crt")}
	o := startOperator(t, w.hooks, operatorOpts{env: env, flags: webhookFlags(w.certs, w.port, "conversion-url-"+ns)})
	want := "conversion reviews are registered at https://127.0.0.1:" + w.port + ", and port " + w.port +
		" of this host is no webhook listener: the conversion listener serves on port " + conversionPort +
		"; set --conversion-webhook-url to https://127.0.0.1:" + conversionPort
	o.waitLog(t, want)
	if code, body := o.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
		t.Errorf("/readyz: %d %q, want 503 with the warning", code, body)
	}
	u, err := w.c.Dynamic.Resource(crdGVR).Get(context.Background(), crd, metav1.GetOptions{})
	must(t, err)
	if got := fmt.Sprint(u.Object["spec"].(map[string]any)["conversion"]); !strings.Contains(got, "https://127.0.0.1:"+w.port+"/") {
		t.Errorf("the CRD's conversion: %s; want the URL of --webhook-url registered", got)
	}
}

// probeWebhook does what a kubelet's HTTPS liveness probe on a webhook
// port does (no client certificate), and returns the status (0: no
// answer).
func probeWebhook(t *testing.T, certs, port string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(t, certs), ServerName: "127.0.0.1"}}}
	resp, err := c.Get("https://127.0.0.1:" + port + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Two operators on one host, each given only shell-operator's settings (its
// own --listen-address and port, as shell-operator users run several):
// both start. The second finds the default probe port and the default
// debug socket taken by the first, warns for each, and goes on without
// them; the first keeps both.
func TestIntegrationTwoShellOperatorInstancesOnOneHost(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	bin := testoperator.Binary(t)
	tmp := t.TempDir() // the system temp dir of both: the default debug socket is shared
	var logs []*testoperator.Buffer
	for i := range 2 {
		hooks := t.TempDir()
		writeHook(t, hooks, "startup.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "exit 0\n"))
		port := testoperator.FreePort(t)
		cmd := exec.Command(bin, "start")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + tmp, "KUBE_CONFIG=" + c.Kubeconfig,
			"SHELL_OPERATOR_HOOKS_DIR=" + hooks, "SHELL_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "SHELL_OPERATOR_LISTEN_PORT=" + port, "LOG_TYPE=json"}
		l := &testoperator.Buffer{}
		startLogged(t, cmd, l)
		logs = append(logs, l)
		waitUntil(t, fmt.Sprintf("operator %d running", i+1), func() bool { return strings.Contains(l.String(), "all bindings started") }, l.String)
		if code, _ := fetch(http.DefaultClient, "http://127.0.0.1:"+port+"/healthz", ""); code != http.StatusOK {
			t.Errorf("operator %d: /healthz on its --listen-address: %d", i+1, code)
		}
	}
	wantAll(t, "the second operator's log", logs[1].String(), "the probe listener's default port is taken", "another process serves the default debug socket")
	if strings.Contains(logs[0].String(), "another process serves the default debug socket") {
		t.Errorf("the first operator found its debug socket taken")
	}
}
