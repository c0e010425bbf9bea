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

func TestParseWrites(t *testing.T) {
	cfg, err := ParseConfig("w.sh", []byte(`
configVersion: v1
onStartup: 1
writes:
- {apiVersion: apps/v1, kind: Deployment, verbs: [create, patch, delete]}
- {kind: Memcached, subresource: status, verbs: [get, update], namespaces: [shop]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Writes) != 2 || cfg.Writes[1].Subresource != "status" || cfg.Writes[1].Namespaces[0] != "shop" || cfg.Writes[0].Verbs[2] != "delete" {
		t.Errorf("writes: %+v", cfg.Writes)
	}
	_, err = ParseConfig("w.sh", []byte(`
configVersion: v1
onStartup: 1
writes:
- {kind: Deployment, verbs: ["*"]}
- {kind: Deployment, verbs: [craete]}
- {kind: Deployment}
- {verbs: [get], subresource: "a/b", namspaces: [x]}
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`writes[0].verbs[0]: "*" grants everything`, `writes[1].verbs[0]: "craete" is not an API verb; did you mean "create"?`,
		"writes[2].verbs: missing", "writes[3].kind: missing", `writes[3].subresource: "a/b"`, `writes[3].namspaces: unknown key; did you mean "namespaces"?`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
