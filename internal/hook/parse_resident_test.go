package hook

import (
	"encoding/json"
	"strings"
	"testing"
)

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
