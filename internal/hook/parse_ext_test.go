package hook

// Tests of the configuration keys hook-operator adds to shell-operator's:
// a binding's finalizer, the hook's writes, staleAfter (in settings or on
// a binding) and the resident settings.

import (
	"encoding/json"
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

func TestResidentSettings(t *testing.T) {
	for _, tc := range []struct {
		settings string
		want     Settings
	}{
		{`{}`, Settings{}},
		{`{resident: false}`, Settings{}},
		{`{resident: true}`, Settings{Resident: true, ResidentMaxRuns: DefaultResidentMaxRuns, ResidentMaxMemory: DefaultResidentMaxMemory}},
		{`{resident: true, residentMaxRuns: 3, residentMaxMemory: 64Mi}`, Settings{Resident: true, ResidentMaxRuns: 3, ResidentMaxMemory: 64 << 20}},
		{`{resident: true, residentMaxMemory: "1G"}`, Settings{Resident: true, ResidentMaxRuns: DefaultResidentMaxRuns, ResidentMaxMemory: 1e9}},
		{`{resident: true, residentMaxMemory: 2097152}`, Settings{Resident: true, ResidentMaxRuns: DefaultResidentMaxRuns, ResidentMaxMemory: 2 << 20}},
	} {
		cfg, err := ParseConfig("r.sh", []byte("{configVersion: v1, onStartup: 1, settings: "+tc.settings+"}"))
		if err != nil {
			t.Errorf("%s: %v", tc.settings, err)
			continue
		}
		if cfg.Settings != tc.want {
			t.Errorf("%s: parsed %+v, want %+v", tc.settings, cfg.Settings, tc.want)
		}
	}
}

func TestResidentSettingsProblems(t *testing.T) {
	for settings, want := range map[string][]string{
		`{resident: "yes"}`:                          {"settings.resident", "must be true or false"},
		`{residentMaxRuns: 5}`:                       {"settings.residentMaxRuns", "has no effect without resident: true"},
		`{resident: false, residentMaxMemory: 64Mi}`: {"settings.residentMaxMemory", "set settings.resident: true, or remove residentMaxMemory"},
		`{resident: true, residentMaxRuns: 0}`:       {"settings.residentMaxRuns", "0: use 1 or more"},
		`{resident: true, residentMaxRuns: "10"}`:    {"settings.residentMaxRuns", "write it without quotes"},
		`{resident: true, residentMaxMemory: 512k}`:  {"settings.residentMaxMemory", "500 KiB: use at least 1Mi"},
		`{resident: true, residentMaxMemory: lots}`:  {"settings.residentMaxMemory", `"lots" is not a size`},
		`{resident: true, residentMaxMemory: -1Gi}`:  {"settings.residentMaxMemory", "is not a size"},
		`{resident: true, residentMaxMemory: [1]}`:   {"settings.residentMaxMemory", "must be a size such as"},
		`{resident: true, residentMaxMemroy: 64Mi}`:  {"settings.residentMaxMemroy", `did you mean "residentMaxMemory"?`},
	} {
		_, err := ParseConfig("r.sh", []byte("{configVersion: v1, onStartup: 1, settings: "+settings+"}"))
		if err == nil {
			t.Errorf("%s: no error, want one naming %s", settings, want[0])
			continue
		}
		for _, w := range append([]string{"r.sh"}, want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want it to mention %q", settings, err, w)
			}
		}
	}
}

func TestResidentSettingsJSON(t *testing.T) {
	in := Settings{Resident: true, ResidentMaxRuns: 7, ResidentMaxMemory: 256 << 20}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"resident":true,"residentMaxRuns":7,"residentMaxMemory":"256Mi"}`; string(b) != want {
		t.Errorf("JSON %s, want %s (sizes as quantities, like the configuration)", b, want)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || back != in {
		t.Errorf("read back %+v, %v; want %+v", back, err, in)
	}
	if err := json.Unmarshal([]byte(`{"residentMaxMemory":"big"}`), &back); err == nil || !strings.Contains(err.Error(), "residentMaxMemory") {
		t.Errorf("bad size: error %v, want one naming residentMaxMemory", err)
	}
}
