package main_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// secretsHook binds to Secrets three ways (the whole object, a jqFilter
// that picks the data, and a filter result alone) and labels the Secret it
// sees. It prints nothing itself: hook output is the hook's own business.
var secretsHook = yamlHook(`configVersion: v1
kubernetes:
- name: whole
  kind: Secret
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
- name: data
  kind: Secret
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  jqFilter: '{data: .data, stringData: .stringData}'
  group: both
- name: password
  kind: Secret
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  jqFilter: '.data.password | @base64d'
  keepFullObjectsInMemory: false
  group: both`,
	`echo '{"operation":"MergePatch","kind":"Secret","namespace":"NAMESPACE","name":"creds","mergePatch":{"metadata":{"labels":{"seen":"yes"}}}}' > "$KUBERNETES_PATCH_PATH"
`)

// A Secret's data shows in none of what the operator prints or writes: its
// logs at debug level, debug snapshots, --dry-run (client and server),
// record's file and output, and replay's output.
func TestIntegrationSecretsStaySecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	raw := make([]byte, 12)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	marker := "hookop-secret-" + hex.EncodeToString(raw)
	forms := []string{marker, base64.StdEncoding.EncodeToString([]byte(marker))}
	_, err := h.c.Client.CoreV1().Secrets(h.ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Annotations: map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf(`{"stringData":{"password":%q}}`, marker),
		}},
		Data: map[string][]byte{"password": []byte(marker), "user": []byte("admin")},
	}, metav1.CreateOptions{})
	must(t, err)

	h.hook(t, "secrets.sh", strings.ReplaceAll(secretsHook, "NAMESPACE", h.ns))

	outputs := map[string]string{}
	check := func() {
		t.Helper()
		for where, out := range outputs {
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("the Secret's data (%q) shows in %s:\n%s", f, where, out)
				}
			}
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(h.bin, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		outputs[name] = string(out)
		return string(out)
	}

	// The operator at debug level, its debug snapshots, then it stops.
	o := h.start(t, "--log-level", "debug")
	o.waitLog(t, "hook run succeeded")
	outputs["debug snapshots"] = o.debug(t, "snapshots", "secrets.sh")
	if !strings.Contains(outputs["debug snapshots"], "creds") {
		t.Fatalf("debug snapshots shows no Secret; the test would prove nothing:\n%s", outputs["debug snapshots"])
	}
	outputs["debug hooks"] = o.debug(t, "hooks")
	outputs["debug queues"] = o.debug(t, "queues")
	must(t, o.cmd.Process.Signal(os.Interrupt))
	_ = o.cmd.Wait()
	outputs["start --log-level debug"] = o.logs.String()

	// Dry-run, both kinds: every run printed, with the diff of the Secret.
	for _, mode := range []string{"client", "server"} {
		cmd := exec.Command(h.bin, "start", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig, "--dry-run="+mode,
			"--log-level", "debug", "--listen-address", "", "--health-listen-address", "", "--debug-socket", "")
		out := &testoperator.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		must(t, cmd.Start())
		// The runs print as they end, and the Synchronization runs (one
		// or two: the group's may join the first) end before the line
		// that says every binding started.
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(out.String(), "all bindings started; running") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if !strings.Contains(out.String(), "all bindings started; running") {
			t.Fatalf("--dry-run=%s did not start every binding within 60s:\n%s", mode, out.String())
		}
		if !strings.Contains(out.String(), "creds") {
			t.Fatalf("--dry-run=%s printed no run about the Secret:\n%s", mode, out.String())
		}
		outputs["start --dry-run="+mode] = out.String()
	}

	// record, its file, and replay of the file.
	fixture := filepath.Join(t.TempDir(), "fixture.yaml")
	run("record", "record", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig, "--out", fixture, "--duration", "2s", "--log-level", "debug")
	data, err := os.ReadFile(fixture)
	must(t, err)
	if !strings.Contains(string(data), "creds") {
		t.Fatalf("the recorded file holds no Secret:\n%s", data)
	}
	outputs["record's file"] = string(data)
	run("replay", "replay", "--hooks-dir", h.hooks, "--objects", fixture, "--log-level", "debug")
	run("replay -o yaml", "replay", "--hooks-dir", h.hooks, "--objects", fixture, "-o", "yaml")
	check()
}
