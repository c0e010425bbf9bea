package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// residentHook is the hook started as the operator starts a resident hook:
// requests on its fd 3, replies on its fd 4.
type residentHook struct {
	cmd      *exec.Cmd
	requests *os.File
	replies  *bufio.Reader
	// stderr is the hook's log stream; read it after done.
	stderr *bytes.Buffer
	done   chan error
}

func startResident(t *testing.T, env ...string) *residentHook {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"BENCH_HOOK_MAIN=1", "HOOK_OPERATOR_RESIDENT=1",
		"HOOK_OPERATOR_REQUEST_FD=3", "HOOK_OPERATOR_REPLY_FD=4"}, env...)...)
	cmd.ExtraFiles = []*os.File{reqR, repW}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	repW.Close()
	h := &residentHook{cmd: cmd, requests: reqW, replies: bufio.NewReader(repR), stderr: stderr, done: make(chan error, 1)}
	go func() { h.done <- cmd.Wait() }()
	t.Cleanup(func() {
		reqW.Close()
		repR.Close()
		_ = cmd.Process.Kill()
	})
	return h
}

// run sends one request for the binding contexts in contextFile and returns
// the reply line.
func (h *residentHook) run(t *testing.T, id, dir, contextFile string) reply {
	t.Helper()
	env := map[string]string{
		"BINDING_CONTEXT_PATH":     contextFile,
		"KUBERNETES_PATCH_PATH":    filepath.Join(dir, "patch"),
		"METRICS_PATH":             filepath.Join(dir, "metrics"),
		"VALIDATING_RESPONSE_PATH": filepath.Join(dir, "validating"),
		"ADMISSION_RESPONSE_PATH":  filepath.Join(dir, "admission"),
		"CONVERSION_RESPONSE_PATH": filepath.Join(dir, "conversion"),
	}
	line, _ := json.Marshal(request{ID: id, Env: env})
	if _, err := h.requests.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		s, _ := h.replies.ReadString('\n')
		got <- s
	}()
	select {
	case s := <-got:
		var r reply
		if err := json.Unmarshal([]byte(s), &r); err != nil || !strings.HasSuffix(s, "\n") {
			t.Fatalf("reply %q: want one JSON line (%v)", s, err)
		}
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("no reply to request %s within 30 s", id)
	}
	return reply{}
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResidentLoop(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bench-out")
	h := startResident(t, "BENCH_OUT="+out)

	syncCtx := writeFile(t, filepath.Join(dir, "1.json"),
		`[{"binding":"configmaps","type":"Synchronization","objects":[{"filterResult":{"name":"a"}},{"filterResult":{"name":"b"}}]}]`)
	before := time.Now().UnixNano()
	if r := h.run(t, "1", dir, syncCtx); r.ID != "1" || r.ExitCode != 0 {
		t.Fatalf("reply to run 1: %+v, want id 1, exit code 0", r)
	}
	eventCtx := writeFile(t, filepath.Join(dir, "2.json"),
		`[{"binding":"configmaps","type":"Event","watchEvent":"Added","filterResult":{"name":"c","value":"small"}},`+
			`{"binding":"configmaps","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"d"}}}]`)
	if r := h.run(t, "2", dir, eventCtx); r.ID != "2" || r.ExitCode != 0 {
		t.Fatalf("reply to run 2: %+v, want id 2, exit code 0", r)
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
	bad := writeFile(t, filepath.Join(dir, "3.json"), `not json`)
	if r := h.run(t, "3", dir, bad); r.ID != "3" || r.ExitCode == 0 {
		t.Errorf("reply to a run with a broken context: %+v, want id 3 and a non-zero exit code", r)
	}
	validating := writeFile(t, filepath.Join(dir, "4.json"),
		`[{"binding":"v","type":"Validating","review":{"request":{"name":"bench-probe"}}}]`)
	if r := h.run(t, "4", dir, validating); r.ID != "4" || r.ExitCode != 0 {
		t.Errorf("reply to the admission run: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "validating")); !strings.Contains(string(got), `"allowed": false`) {
		t.Errorf("the probe's answer, from the path of this run's request: %q, want it denied", got)
	}

	// Closing fd 3 stops the hook.
	h.requests.Close()
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("the hook exited with %v after fd 3 closed, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook did not exit within 30 s of fd 3 closing")
	}
	if log := h.stderr.String(); !strings.Contains(log, "run 3: binding contexts") {
		t.Errorf("stderr %q: want the failed run's error, naming the run", log)
	}
}

func TestResidentRejectsBadRequest(t *testing.T) {
	h := startResident(t, "BENCH_OUT="+filepath.Join(t.TempDir(), "out"))
	if _, err := h.requests.Write([]byte("run please\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		if err == nil {
			t.Error("a request line that is not the protocol's JSON: want a non-zero exit")
		}
		if log := h.stderr.String(); !strings.Contains(log, `request "run please" on fd 3`) {
			t.Errorf("stderr %q: want the bad request named", log)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook did not exit within 30 s of a bad request")
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
