package hook

import (
	"strings"
	"testing"
)

func TestFinalizerOption(t *testing.T) {
	cfg, err := ParseConfig("db.sh", []byte(`
configVersion: v1
kubernetes:
- kind: SampleDB
  finalizer: db.example.com/snapshot
  executeHookOnOwnStatusChange: true
`))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kubernetes[0]
	if k.Finalizer != "db.example.com/snapshot" || !k.ExecuteHookOnOwnStatusChange {
		t.Errorf("parsed %+v", k)
	}
	for src, want := range map[string]string{
		"finalizer: cleanup":                 "kubernetes[0].finalizer",
		"finalizer: 'a b/c'":                 "not a finalizer name",
		"finalizer: x.io/y\n  group: g":      "cannot be used with group",
		"executeHookOnOwnStatusChange: 'no'": "executeHookOnOwnStatusChange",
	} {
		_, err := ParseConfig("db.sh", []byte("configVersion: v1\nkubernetes:\n- kind: SampleDB\n  "+src+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", src, err, want)
		}
	}
}
