package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// filesHolding lists the files under dir whose content holds key.
func filesHolding(t *testing.T, dir string, key []byte) []string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if data, err := os.ReadFile(path); err == nil && (bytes.Contains(data, key) || bytes.Contains(data, []byte("PRIVATE KEY"))) {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// An operator with --webhook-self-signed serves the certificate of its
// Secret without writing its private key to any file: neither the system
// temp dir ($TMPDIR) nor --tmp-dir holds it while it runs, nor after it is
// killed with SIGKILL (no cleanup runs then).
func TestIntegrationSelfSignedKeyNeverOnDisk(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	hooks := t.TempDir()
	script := `#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
cat <<EOF
configVersion: v1
kubernetesValidating:
- name: nokeys.webhook-test.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
EOF
exit 0
fi
echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"
`
	if err := os.WriteFile(filepath.Join(hooks, "validate.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	sysTmp, opTmp := t.TempDir(), t.TempDir()
	// Nothing is registered: the test needs the server and its Secret only.
	cmd := exec.Command(testoperator.Binary(t), "start", "--hooks-dir", hooks, "--kubeconfig", c.Kubeconfig, "--log-format", "json",
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", filepath.Join(t.TempDir(), "debug.sock"), "--tmp-dir", opTmp,
		"--webhook-listen-address", "127.0.0.1:"+port, "--webhook-url", "https://127.0.0.1:"+port, "--webhook-register=false",
		"--webhook-self-signed", "--operator-namespace", ns)
	cmd.Env = append(os.Environ(), "TMPDIR="+sysTmp)
	logs := &testoperator.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("operator log:\n%s", logs.String())
		}
	})

	poll.UntilShowing(t, 60*time.Second, "the operator to serve its webhooks",
		func() bool { return strings.Contains(logs.String(), `"msg":"serving webhooks"`) }, logs.String)
	secret, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).
		Get(context.Background(), "hook-operator-webhook-certs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := secret.Object["data"].(map[string]any)
	key, _ := data["tls.key"].(string)
	if key == "" {
		t.Fatal("the Secret has no tls.key")
	}
	// The server presents the Secret's certificate, from memory.
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("the webhook server: %v", err)
	}
	served := conn.ConnectionState().PeerCertificates[0].Raw
	conn.Close()
	crt, _ := data["tls.crt"].(string)
	block, _ := pem.Decode(decodeB64(t, crt))
	if block == nil || !bytes.Equal(block.Bytes, served) {
		t.Errorf("the server does not present the Secret's certificate")
	}
	keyPEM := decodeB64(t, key)
	for _, dir := range []string{sysTmp, opTmp} {
		if found := filesHolding(t, dir, keyPEM); len(found) > 0 {
			t.Errorf("while it runs, a private key is on disk: %v", found)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	for _, dir := range []string{sysTmp, opTmp} {
		if found := filesHolding(t, dir, keyPEM); len(found) > 0 {
			t.Errorf("after SIGKILL, a private key is left on disk: %v", found)
		}
	}
}
