package operator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// Admission and conversion requests run their hooks at once, beside the
// queues and beside each other, but never more than the cap at a time
// (the webhook listener's slots are shared by both kinds); with the cap at 3 and 12 requests
// of 300 ms each, at least 2 and at most 3 hooks run at once.
func TestIntegrationWebhookConcurrencyCap(t *testing.T) {
	e := newEnv(t)
	running := t.TempDir()
	peak := filepath.Join(t.TempDir(), "peak")
	// Each run marks itself in running/, notes how many runs are marked
	// then, sleeps, and unmarks itself.
	body := fmt.Sprintf(`: >%[1]q/$$
ls %[1]q | wc -l >>%[2]q
sleep 0.3
rm -f %[1]q/$$`, running, peak)
	e.bashHook("policy.sh", `configVersion: v1
kubernetesValidating:
- name: policy.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]`, body+`
echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"`)
	e.bashHook("convert.sh", `configVersion: v1
kubernetesCustomResourceConversion:
- name: a_to_b
  crdName: things.example.com
  conversions: [{fromVersion: example.com/a, toVersion: example.com/b}]`, body+`
jq '{convertedObjects: [.[0].review.request.objects[] | .apiVersion = "example.com/b"]}' "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"`)
	e.start()
	// The webhook server's handler, behind its listener's slots (3).
	srv, err := webhook.NewServer(webhook.Options{}, e.op)
	if err != nil {
		t.Fatal(err)
	}
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
	client := tlsServer.Client()
	tlsServer.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(e.logs)
	addr, err := webhook.Serve(ctx, "127.0.0.1:0", srv.Handler(), webhook.ServeOptions{
		Slots: webhook.NewSlots(3, 0), Log: log,
		Certificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &tlsServer.TLS.Certificates[0], nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + addr.String()

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Go(func() {
			url, body := base+webhook.Path("policy.example.com"),
				fmt.Sprintf(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u%d", "operation": "CREATE"}}`, i)
			if i%2 == 1 {
				url, body = base+"/things.example.com",
					fmt.Sprintf(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "u%d", "desiredAPIVersion": "example.com/b", "objects": [{"apiVersion": "example.com/a", "kind": "Thing"}]}}`, i)
			}
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			r, _ := out["response"].(map[string]any)
			if r["allowed"] != true && fmt.Sprint(r["result"]) != "map[status:Success]" {
				errs <- fmt.Errorf("request %d: %v", i, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data, err := os.ReadFile(peak)
	if err != nil {
		t.Fatal(err)
	}
	max := 0
	for _, line := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(line)
		max = maxInt(max, n)
	}
	if lines := bytes.Count(data, []byte("\n")); lines != 12 {
		t.Errorf("%d runs, want 12", lines)
	}
	if max > 3 || max < 2 {
		t.Errorf("at most %d hooks ran at once, want 2 or 3 (the cap is 3)", max)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// The webhook server's requests look their binding up in the hook set
// current when they arrive: after a reload that changes a validating
// binding, Admit runs the reloaded hook, WebhooksChanged is closed and
// WebhookBindings says what is bound now; after one that removes it, the
// path is not served (webhook.ErrNotServed), and a reload that changes no
// webhook binding does not close WebhooksChanged.
func TestIntegrationWebhookLookupFollowsReload(t *testing.T) {
	e := newEnv(t)
	policy := func(version, timeout int) {
		e.bashHook("policy.sh", fmt.Sprintf(`configVersion: v1
kubernetesValidating:
- name: policy.example.com
  timeoutSeconds: %d
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]`, timeout),
			fmt.Sprintf(`echo '{"allowed": false, "message": "version %d"}' >"$VALIDATING_RESPONSE_PATH"`, version))
	}
	policy(1, 5)
	e.start()
	path := webhook.Path("policy.example.com")
	review := json.RawMessage(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u1", "operation": "CREATE"}}`)
	admit := func() string {
		t.Helper()
		resp, a, err := e.op.Admit(context.Background(), path, review)
		if err != nil {
			return err.Error()
		}
		return a.Hook + ": " + resp.Message
	}
	if got := admit(); got != "policy.sh: version 1" {
		t.Fatalf("before the reload: %q", got)
	}
	reload := func() {
		t.Helper()
		hooks, err := hook.Load(context.Background(), e.dir, hook.LoadOptions{})
		must(t, err)
		_, err = e.op.Reload(hooks)
		must(t, err)
	}

	changed := e.op.WebhooksChanged()
	policy(2, 6)
	reload()
	select {
	case <-changed:
	default:
		t.Error("a reload that changed a validating binding did not close WebhooksChanged")
	}
	if got := admit(); got != "policy.sh: version 2" {
		t.Errorf("after the reload: %q, want the reloaded hook's answer", got)
	}
	b, err := e.op.WebhookBindings()
	must(t, err)
	if len(b.Validating) != 1 || b.Validating[0].Binding.Raw["timeoutSeconds"] != int64(6) {
		t.Errorf("WebhookBindings after the reload: %+v, want the reloaded binding (timeoutSeconds 6)", b.Validating)
	}

	unchanged := e.op.WebhooksChanged()
	e.bashHook("other.sh", "configVersion: v1\nschedule: [{name: rare, crontab: '0 0 1 1 *'}]", "")
	reload()
	select {
	case <-unchanged:
		t.Error("a reload that changed no webhook binding closed WebhooksChanged")
	default:
	}

	must(t, os.Remove(filepath.Join(e.dir, "policy.sh")))
	reload()
	if _, _, err := e.op.Admit(context.Background(), path, review); !errors.Is(err, webhook.ErrNotServed) {
		t.Errorf("after the binding was removed: %v, want ErrNotServed", err)
	}
}
