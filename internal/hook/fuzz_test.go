package hook

import (
	"strings"
	"testing"
)

// Any --config output: ParseConfig does not panic, gives the same answer
// twice (no map-order dependence), and every error names the hook.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"configVersion: v1\nonStartup: 1\n",
		`{"configVersion":"v1","schedule":[{"name":"every","crontab":"*/5 * * * *"}]}`,
		"configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\n  jqFilter: .metadata.labels\n  namespace: {nameSelector: {matchNames: [default]}}\n  labelSelector: {matchLabels: {app: web}}\n  group: g\n",
		"configVersion: v1\nkubernetes:\n- kind: ConfigMap\n  executeHookOnEvent: [Added, Bogus]\n",
		"configVersion: v1\nsettings: {executionMinInterval: 10s, executionBurst: 0, timeout: -1s}\n",
		"configVersion: v1\nkubernetesValidating:\n- name: v\n  rules: [{operations: [CREATE], apiVersions: [v1], resources: [pods]}]\n",
		"", "configVersion: v2", "- a\n- b", "{", "configVersion: v1\nkubernetes: 5\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err1 := ParseConfig("fuzz/hook.sh", data)
		_, err2 := ParseConfig("fuzz/hook.sh", data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two parses differ:\n%v\n%v", err1, err2)
		}
		if err1 != nil && !strings.Contains(err1.Error(), "fuzz/hook.sh") {
			t.Fatalf("error does not name the hook: %v", err1)
		}
	})
}
