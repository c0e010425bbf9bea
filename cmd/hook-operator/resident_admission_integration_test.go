package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A resident validating hook (a bash loop speaking the protocol) answers
// the real API server's admission requests from one process: a denial
// with the hook's message, then allowed creates, all with one start.
func TestIntegrationResidentAdmission(t *testing.T) {
	t.Parallel()
	w := newWebhookTest(t)
	c, ns := w.c, w.ns
	configName := "hook-operator-test-" + ns
	marks := t.TempDir()
	w.hook(t, "validate.sh", yamlHook(`configVersion: v1
settings: {resident: true}
kubernetesValidating:
- name: values.resident-test.example.com
  timeoutSeconds: 10
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
  namespace: {labelSelector: {matchLabels: {kubernetes.io/metadata.name: `+ns+`}}}
  labelSelector: {matchLabels: {admission-test: "yes"}}`, `[[ ${HOOK_OPERATOR_RESIDENT:-} == 1 ]] || { echo "not resident" >&2; exit 1; }
echo $$ >> `+marks+`/starts
while IFS= read -r line <&3; do
  [[ $line =~ \"id\":\"([0-9]+)\" ]] && id=${BASH_REMATCH[1]}
  [[ $line =~ \"BINDING_CONTEXT_PATH\":\"([^\"]+)\" ]] && ctx=${BASH_REMATCH[1]}
  [[ $line =~ \"VALIDATING_RESPONSE_PATH\":\"([^\"]+)\" ]] && out=${BASH_REMATCH[1]}
  if [[ $(jq -r '.[0].review.request.object.data.value // ""' "$ctx") == bad ]]; then
    echo '{"allowed": false, "message": "value bad is not allowed here"}' > "$out"
  else
    echo '{"allowed": true}' > "$out"
  fi
  printf '{"id":"%s","exitCode":0}\n' "$id" >&4
done
`))
	deleteConfigurationsAtEnd(t, c, configName)
	o := w.startWebhooks(t, configName)
	o.waitLog(t, `"msg":"webhook configuration applied"`)

	cm := func(name, value string) string { return labelledConfigMap(ns, name, value) }
	w.waitDenied(t, o, cm("bad", "bad"), "value bad is not allowed here")
	for i := range 5 {
		if out, err := kubectlApply(c.Kubeconfig, cm(fmt.Sprintf("good-%d", i), "fine")); err != nil {
			t.Fatalf("an allowed create: %v\n%s", err, out)
		}
	}
	data, _ := os.ReadFile(filepath.Join(marks, "starts"))
	if starts := strings.Fields(string(data)); len(starts) != 1 {
		t.Errorf("the admission requests started the hook %d times (%v), want once", len(starts), starts)
	}
	if n := o.metric(t, `hook_operator_hook_process_starts_total{hook="validate.sh"}`); n != 1 {
		t.Errorf("hook_process_starts_total = %v, want 1", n)
	}
}
