package sdk

import (
	"encoding/json"
	"testing"
	"time"
)

func TestExecuteHookOnEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		on   *Events
		want string
	}{
		{"absent means all events", nil, `{"kind":"Pod"}`},
		{"empty means none", OnEvents(), `{"kind":"Pod","executeHookOnEvent":[]}`},
		{"nil list inside means none too", new(Events), `{"kind":"Pod","executeHookOnEvent":[]}`},
		{"listed", OnEvents(EventAdded), `{"kind":"Pod","executeHookOnEvent":["Added"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(KubernetesBinding{Kind: "Pod", ExecuteHookOnEvent: tc.on})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestConfigOmitsUnset(t *testing.T) {
	got, err := json.Marshal(Config{Schedule: []ScheduleBinding{{Crontab: "@hourly"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"configVersion":"v1","schedule":[{"crontab":"@hourly"}]}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, err = json.Marshal(Config{OnStartup: Ptr(0), Settings: &Settings{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"configVersion":"v1","onStartup":0,"settings":{}}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestFalseDefaultsArePrinted(t *testing.T) {
	got, err := json.Marshal(KubernetesBinding{
		Kind:                         "Pod",
		ExecuteHookOnSynchronization: Ptr(false),
		WaitForSynchronization:       Ptr(true),
		KeepFullObjectsInMemory:      Ptr(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Pod","executeHookOnSynchronization":false,"waitForSynchronization":true,"keepFullObjectsInMemory":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "",
		500 * time.Millisecond:            "500ms",
		30 * time.Second:                  "30s",
		10 * time.Minute:                  "10m",
		90 * time.Second:                  "1m30s",
		2 * time.Hour:                     "2h",
		time.Hour + 30*time.Minute:        "1h30m",
		time.Hour + time.Second:           "1h0m1s",
		-time.Minute:                      "-1m",
		time.Hour + 30*time.Minute + 1500: "1h30m0.0000015s",
	} {
		if got := durationString(d); got != want {
			t.Errorf("durationString(%v) = %q, want %q", d, got, want)
		}
		if d == 0 {
			continue
		}
		if back, err := time.ParseDuration(durationString(d)); err != nil || back != d {
			t.Errorf("%q parses back as %v, %v; want %v", durationString(d), back, err, d)
		}
	}
}

// TestResidentSettings prints the resident settings under the names the
// runtime reads, the memory limit as a quantity.
func TestResidentSettings(t *testing.T) {
	for _, tc := range []struct {
		settings Settings
		want     string
	}{
		{Settings{Resident: true}, `{"resident":true}`},
		{Settings{Resident: true, ResidentMaxRuns: 500, ResidentMaxMemory: 256 << 20}, `{"resident":true,"residentMaxRuns":500,"residentMaxMemory":"256Mi"}`},
		{Settings{Resident: true, ResidentMaxMemory: 1 << 30}, `{"resident":true,"residentMaxMemory":"1Gi"}`},
		{Settings{Resident: true, ResidentMaxMemory: 300_000_000}, `{"resident":true,"residentMaxMemory":"300000000"}`},
	} {
		got, err := json.Marshal(tc.settings)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v printed %s (%v), want %s", tc.settings, got, err, tc.want)
		}
	}
}
