package hook

import (
	"context"
	"strings"
	"testing"
)

// A kind that is a near miss of a built-in one fails loading, naming the
// hook, the field and the binding, and suggesting the kind; a custom
// resource's kind, installed or not, loads.
func TestLoadRejectsMisspelledKinds(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "group.sh", `cat <<'YAML'
configVersion: v1
kubernetes:
- name: apps
  apiVersion: example.com/v1
  kind: App
  group: g
- name: namespaces
  kind: Namespce
  group: g
- name: cms
  apiVersion: apps/v1
  kind: ConfigMap
- name: widgets
  kind: Widget
YAML
`)
	_, err := Load(context.Background(), dir, LoadOptions{})
	if err == nil {
		t.Fatal("a misspelled kind loaded")
	}
	for _, want := range []string{
		`hook group.sh: kubernetes[1].kind: binding "namespaces": "Namespce" is not a kind of Kubernetes; did you mean Namespace?`,
		`hook group.sh: kubernetes[2].apiVersion: binding "cms": ConfigMap is a kind of apiVersion v1, not of apps/v1; set apiVersion: v1`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks\n%s", err, want)
		}
	}
	if strings.Contains(err.Error(), "App") || strings.Contains(err.Error(), "Widget") {
		t.Errorf("custom resources' kinds were rejected: %v", err)
	}
}
