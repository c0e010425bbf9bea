package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/residenttest"
)

// TestMain lets a test start this package's test binary as the hook
// itself: with BENCH_HOOK_MAIN=1 it runs main instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_HOOK_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startResident starts this package's test binary as the hook, as the
// operator starts a resident hook: requests on its fd 3, replies on its
// fd 4.
func startResident(t *testing.T, env ...string) *residenttest.Process {
	t.Helper()
	return residenttest.Start(t, exec.Command(os.Args[0]), append([]string{"BENCH_HOOK_MAIN=1"}, env...)...)
}

func TestResidentLoop(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench-out")
	h := startResident(t, "BENCH_OUT="+out)

	before := time.Now().UnixNano()
	if r := h.Run(t, "1", `[{"binding":"configmaps","type":"Synchronization","objects":[{"filterResult":{"name":"a"}},{"filterResult":{"name":"b"}}]}]`); r.ExitCode != 0 {
		t.Fatalf("reply to run 1: exit code %d, want 0", r.ExitCode)
	}
	if r := h.Run(t, "2", `[{"binding":"configmaps","type":"Event","watchEvent":"Added","filterResult":{"name":"c","value":"small"}},`+
		`{"binding":"configmaps","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"d"}}}]`); r.ExitCode != 0 {
		t.Fatalf("reply to run 2: exit code %d, want 0", r.ExitCode)
	}
	after := time.Now().UnixNano()

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("$BENCH_OUT:\n%s\nwant a sync mark and two event marks", data)
	}
	var stamps []int64
	for i, want := range []string{"sync %d 2", "%d c", "%d d"} {
		f := strings.Fields(lines[i])
		tsField := f[0]
		if f[0] == "sync" {
			tsField = f[1]
		}
		ts, err := strconv.ParseInt(tsField, 10, 64)
		if err != nil || fmt.Sprintf(want, ts) != lines[i] || ts < before || ts > after {
			t.Errorf("mark %q: want %q with a time between the first request and the last reply", lines[i], want)
		}
		stamps = append(stamps, ts)
	}
	if stamps[0] >= stamps[1] || stamps[1] != stamps[2] {
		t.Errorf("times %v: each run's marks share the time its request was read, and run 2 is later", stamps)
	}

	// A run that fails is answered with a failure; the process stays.
	if r := h.Run(t, "3", `not json`); r.ExitCode == 0 {
		t.Errorf("reply to a run with a broken context: exit code 0, want a non-zero one")
	}
	validating := h.Run(t, "4", `[{"binding":"v","type":"Validating","review":{"request":{"name":"bench-probe"}}}]`)
	if validating.ExitCode != 0 {
		t.Errorf("reply to the admission run: exit code %d, want 0", validating.ExitCode)
	}
	if got := validating.File(t, "VALIDATING_RESPONSE_PATH"); !strings.Contains(got, `"allowed": false`) {
		t.Errorf("the probe's answer, from the path of this run's request: %q, want it denied", got)
	}

	// Closing fd 3 stops the hook.
	if err := h.Stop(t); err != nil {
		t.Errorf("the hook exited with %v after fd 3 closed, want status 0", err)
	}
	if log := h.Log.String(); !strings.Contains(log, "run 3: binding contexts") {
		t.Errorf("log %q: want the failed run's error, naming the run", log)
	}
}

func TestResidentRejectsBadRequest(t *testing.T) {
	h := startResident(t, "BENCH_OUT="+filepath.Join(t.TempDir(), "out"))
	if _, err := h.Requests.Write([]byte("run please\n")); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(t); err == nil {
		t.Error("a request line that is not the protocol's JSON: want a non-zero exit")
	}
	if log := h.Log.String(); !strings.Contains(log, `request "run please" on fd 3`) {
		t.Errorf("log %q: want the bad request named", log)
	}
}

func TestName(t *testing.T) {
	for raw, want := range map[string]string{
		`{"filterResult":"p-1"}`:                      "p-1",
		`{"filterResult":{"name":"b-2","value":"x"}}`: "b-2",
		`{"object":{"metadata":{"name":"c-3"}}}`:      "c-3",
		`{"filterResult":null}`:                       "null",
	} {
		var c bindingContext
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatal(err)
		}
		if got := name(c); got != want {
			t.Errorf("name(%s) = %q, want %q", raw, got, want)
		}
	}
}
