package hook

import (
	"strings"
	"testing"
	"time"
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

// staleAfter (extension) in settings applies to every kubernetes binding of
// the hook; a binding's own overrides it; neither leaves the operator's
// default. Below a second it is an error that names the hook and the field
// and says what to write instead.
func TestStaleAfter(t *testing.T) {
	cfg, err := ParseConfig("pods.sh", []byte(`
configVersion: v1
settings: {staleAfter: 10m}
kubernetes:
- {name: pods, kind: Pod}
- {name: nodes, kind: Node, staleAfter: 90s}
`))
	if err != nil {
		t.Fatal(err)
	}
	const def = 3 * time.Minute
	if got := StaleAfterOf(&cfg.Kubernetes[0], cfg.Settings, def); got != 10*time.Minute {
		t.Errorf("pods: %s, want the hook's 10m", got)
	}
	if got := StaleAfterOf(&cfg.Kubernetes[1], cfg.Settings, def); got != 90*time.Second {
		t.Errorf("nodes: %s, want its own 90s", got)
	}
	plain, err := ParseConfig("plain.sh", []byte(`{configVersion: v1, kubernetes: [{kind: Pod}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := StaleAfterOf(&plain.Kubernetes[0], plain.Settings, def); got != def {
		t.Errorf("without staleAfter: %s, want the operator's %s", got, def)
	}
	for src, want := range map[string]string{
		`settings: {staleAfter: 500ms}, kubernetes: [{kind: Pod}]`: "hook pods.sh: settings.staleAfter: 500ms: use at least 1s, or remove it for the operator's --watch-idle-timeout",
		`kubernetes: [{kind: Pod, staleAfter: 0s}]`:                "hook pods.sh: kubernetes[0].staleAfter: 0s: use at least 1s",
		`kubernetes: [{kind: Pod, staleAfter: 300}]`:               `kubernetes[0].staleAfter: must be a duration string such as "30s" or "5m", not the number 300; add a unit, for example "300s"`,
	} {
		_, err := ParseConfig("pods.sh", []byte("{configVersion: v1, "+src+"}"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", src, err, want)
		}
	}
}
