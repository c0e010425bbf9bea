package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// bashResident is hooks/bash/resident.sh started as the operator starts a
// resident hook: requests on its fd 3, replies on its fd 4.
type bashResident struct {
	requests *os.File
	replies  *bufio.Reader
	// stderr is the hook's log stream; read it after done.
	stderr *bytes.Buffer
	done   chan error
}

func startBashResident(t *testing.T, env ...string) *bashResident {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("hooks", "bash", "resident.sh"))
	cmd.Env = append(os.Environ(), append([]string{"HOOK_OPERATOR_RESIDENT=1", "HOOK_OPERATOR_REQUEST_FD=3", "HOOK_OPERATOR_REPLY_FD=4"}, env...)...)
	cmd.ExtraFiles = []*os.File{reqR, repW}
	h := &bashResident{requests: reqW, replies: bufio.NewReader(repR), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	repW.Close()
	go func() { h.done <- cmd.Wait() }()
	t.Cleanup(func() { reqW.Close(); repR.Close(); _ = cmd.Process.Kill() })
	return h
}

// TestBashResidentHook runs hooks/bash/resident.sh with requests in the
// protocol's key order.
func TestBashResidentHook(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "bench-out")
	h := startBashResident(t, "BENCH_OUT="+out)
	reqW, replies, done, stderr := h.requests, h.replies, h.done, h.stderr

	run := func(id, contexts string) string {
		t.Helper()
		ctxPath := filepath.Join(dir, id+".json")
		if err := os.WriteFile(ctxPath, []byte(contexts), 0o600); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf(`{"id":"%s","env":{"BINDING_CONTEXT_PATH":"%s","KUBERNETES_PATCH_PATH":"%s","METRICS_PATH":"%s",`+
			`"VALIDATING_RESPONSE_PATH":"%s","ADMISSION_RESPONSE_PATH":"%s","CONVERSION_RESPONSE_PATH":"%s"}}`+"\n",
			id, ctxPath, filepath.Join(dir, "patch"), filepath.Join(dir, "metrics"), filepath.Join(dir, "validating-"+id),
			filepath.Join(dir, "admission"), filepath.Join(dir, "conversion"))
		if _, err := reqW.WriteString(line); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { s, _ := replies.ReadString('\n'); got <- s }()
		select {
		case s := <-got:
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("no reply to request %s within 30 s", id)
		}
		return ""
	}

	before := time.Now().UnixNano()
	if r := run("7", `[{"type":"Synchronization","objects":[{"filterResult":{"name":"a"}}]}]`); r != `{"id":"7","exitCode":0}`+"\n" {
		t.Fatalf("reply to run 7: %q", r)
	}
	if r := run("8", `[{"type":"Event","filterResult":{"name":"c"}},{"type":"Event","object":{"metadata":{"name":"d"}}}]`); r != `{"id":"8","exitCode":0}`+"\n" {
		t.Fatalf("reply to run 8: %q", r)
	}
	after := time.Now().UnixNano()
	if r := run("9", `not json`); r == `{"id":"9","exitCode":0}`+"\n" || !strings.HasPrefix(r, `{"id":"9","exitCode":`) {
		t.Errorf("reply to a run with a broken context: %q, want id 9 and a non-zero exit code", r)
	}
	if r := run("10", `[{"type":"Validating","review":{"request":{"name":"bench-probe"}}}]`); r != `{"id":"10","exitCode":0}`+"\n" {
		t.Errorf("reply to the admission run: %q", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "validating-10")); !strings.Contains(string(got), `"allowed": false`) {
		t.Errorf("the probe's answer at the path of run 10's request: %q, want it denied", got)
	}

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var marks []mark
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m, err := parseMark(line)
		if err != nil {
			t.Fatal(err)
		}
		if ts := m.At.UnixNano(); ts < before-int64(time.Millisecond) || ts > after {
			t.Errorf("mark %q: its time is not between the first request and the last reply", line)
		}
		marks = append(marks, m)
	}
	if len(marks) != 3 || !marks[0].Sync || marks[0].Objects != 1 || marks[1].Name != "c" || marks[2].Name != "d" ||
		!marks[1].At.Equal(marks[2].At) || !marks[0].At.Before(marks[1].At) {
		t.Errorf("marks %+v: want sync of 1, then c and d with the time run 8's request was read", marks)
	}

	reqW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the hook exited with %v after fd 3 closed, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook did not exit within 30 s of fd 3 closing")
	}
	if stderr.Len() == 0 {
		t.Error("the failed run wrote nothing to stderr; want jq's error in the log stream")
	}
}

func TestParseHooks(t *testing.T) {
	for in, want := range map[string][]string{
		"both":                      {"bash", "go"},
		"all":                       {"bash", "go", "go-resident", "bash-resident"},
		"go-resident":               {"go-resident"},
		"bash-resident":             {"bash-resident"},
		"go, go-resident,go":        {"go", "go-resident"},
		"bash-resident,bash":        {"bash-resident", "bash"},
		"go":                        {"go"},
		"go-resident,bash-resident": {"go-resident", "bash-resident"},
	} {
		got, err := parseHooks(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseHooks(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ",", "python", "go,resident", "both,go"} {
		if _, err := parseHooks(bad); err == nil || !strings.Contains(err.Error(), "--hook") {
			t.Errorf("parseHooks(%q) = %v; want an error naming --hook", bad, err)
		}
	}
}

func TestSubjectsRunTheOneShotHookForTheReference(t *testing.T) {
	b := &bench{cfg: &Config{Hooks: []string{"go", "go-resident", "bash-resident"}},
		impls: []*implementation{{name: ours, pprof: true}, {name: reference}}}
	var got []string
	for _, s := range b.subjects(1) {
		got = append(got, s.impl.name+" "+s.hook)
	}
	want := []string{"hook-operator go", "shell-operator go", "hook-operator go-resident", "hook-operator bash-resident", "shell-operator bash"}
	if !slices.Equal(got, want) {
		t.Errorf("subjects = %q, want %q: shell-operator runs the one-shot form, once", got, want)
	}
}

func TestWithResident(t *testing.T) {
	config := []byte(`{"configVersion":"v1","settings":{"parallelism":16},"kubernetes":[]}`)
	got, err := withResident(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"resident":true`, `"parallelism":16`, `"configVersion":"v1"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("withResident = %s, lacks %s", got, want)
		}
	}
	if got, _ := withResident(hookConfig("ns", nil)); !strings.Contains(string(got), `"settings":{"resident":true}`) {
		t.Errorf("withResident without settings = %s", got)
	}
	if _, err := withResident([]byte("{")); err == nil {
		t.Error("withResident of a broken configuration should fail")
	}
}

// residentRuns are runs of the trickle, burst and admission scenarios with
// the one-shot and resident Go hooks and shell-operator's Go hook.
func residentRuns() []Run {
	var runs []Run
	add := func(scenario, operator, hook string, metrics map[string]float64) {
		r := newRun(scenario, "", testSubject(operator, hook), 1, 0)
		r.Objects = map[string]int{"trickle": 300, "burst": 3000, "admission": 1000}[scenario]
		r.Metrics = metrics
		runs = append(runs, r)
	}
	add("trickle", ours, "go", map[string]float64{mP50: 8, mP99: 30})
	add("trickle", reference, "go", map[string]float64{mP50: 60, mP99: 150})
	add("trickle", ours, "go-resident", map[string]float64{mP50: 1.5, mP99: 12})
	add("burst", ours, "go", map[string]float64{mP99: 100, mCPUWithHooks: 0.5})
	add("burst", reference, "go", map[string]float64{mP99: 300, mCPUWithHooks: 2})
	add("burst", ours, "go-resident", map[string]float64{mP99: 30, mCPUWithHooks: 0.2, mHookRSS: 4.5})
	add("admission", ours, "go", map[string]float64{mAdmAddedP50: 14, mAdmRate: 70})
	add("admission", ours, "go-resident", map[string]float64{mAdmAddedP50: 2, mAdmRate: 420, mAdmRateGain: 1.1, mAdmDirectRate: 3000, mAdmDirectGain: 6})
	return runs
}

func TestSummarizeResident(t *testing.T) {
	cfg := testConfig()
	sums := summarize(cfg, residentRuns())
	find := func(scenario, hook, metric string) Summary {
		t.Helper()
		r := &Report{Summaries: sums}
		s := r.find(scenario, "", ours, hook, metric, 0)
		if s == nil {
			t.Fatalf("no summary of %s %s %s", scenario, hook, metric)
		}
		return *s
	}
	if s := find("trickle", "go-resident", mP50); s.Target == nil || *s.Target != 2 || !*s.Pass {
		t.Errorf("go-resident trickle p50 1.5 ms against its own target of 2 ms: %+v", s)
	}
	if s := find("trickle", "go", mP50); s.Target == nil || *s.Target != 40 {
		t.Errorf("the one-shot Go hook keeps the general target of 40 ms: %+v", s)
	}
	if s := find("trickle", "go-resident", mP99); *s.Target != 10 || *s.Pass || s.Reference == nil || *s.Reference != 150 || !*s.RatioPass {
		t.Errorf("go-resident trickle p99 12 ms: over 10 ms, against shell-operator's go hook's 150 ms: %+v", s)
	}
	if s := find("burst", "go-resident", mCPUWithHooks); s.Ratio == nil || *s.Ratio != 0.1 || *s.RatioTarget != 0.15 || !*s.RatioPass || s.Target != nil {
		t.Errorf("go-resident CPU with hooks 0.2 ms against shell-operator's 2 ms: %+v", s)
	}
	if s := find("burst", "go", mCPUWithHooks); s.RatioTarget != nil {
		t.Errorf("the one-shot Go hook has no target for CPU with hooks: %+v", s)
	}
	if s := find("burst", "go-resident", mP99); *s.RatioTarget != 0.15 || !*s.RatioPass {
		t.Errorf("go-resident burst p99 30 ms against 300 ms, target 0.15×: %+v", s)
	}
	if s := find("admission", "go-resident", mAdmDirectGain); *s.Target != 5 || !*s.Pass {
		t.Errorf("go-resident admission sent directly 6× the one-shot rate, target at least 5×: %+v", s)
	}
	if s := find("admission", "go-resident", mAdmRateGain); s.Target != nil {
		t.Errorf("through the API server, the rate has no target: %+v", s)
	}
	if s := find("admission", "go-resident", mAdmAddedP50); *s.Target != 3 || !*s.Pass {
		t.Errorf("go-resident admission adds 2 ms, target 3 ms: %+v", s)
	}
}

func TestMarkdownResident(t *testing.T) {
	cfg := testConfig()
	cfg.Scenarios = []string{"trickle", "burst", "admission"}
	cfg.Hooks = []string{"go", "go-resident"}
	runs := residentRuns()
	rep, md := testReport(t, cfg, runs,
		"| go hook: hook-operator | shell-operator | ratio | go-resident hook: hook-operator | shell-operator (go hook) | ratio | result |",
		"| trickle 30/s for 10s | latency p50 | ≤ 40.0 ms; go-resident: ≤ 2.0 ms |  | 8.0 ms | 60.0 ms | 0.13× | 1.5 ms | 60.0 ms | 0.03× | pass |",
		"| trickle 30/s for 10s | latency p99 | ≤ 90.0 ms; go-resident: ≤ 10.0 ms | ≤ 0.40× | 30.0 ms | 150.0 ms | 0.20× | 12.0 ms | 150.0 ms | 0.08× | FAIL (go-resident) |",
		"| burst 3,000 | operator plus hook CPU per event |  | go-resident: ≤ 0.15× | 0.500 ms | 2.000 ms | 0.25× | 0.200 ms | 2.000 ms | 0.10× | pass |",
		"| burst 3,000 | latency p99 | ≤ 250.0 ms | ≤ 0.40×; go: ≤ 0.15×; go-resident: ≤ 0.15× |",
		"| burst 3,000 | RSS of a resident hook process |  |  | — | — | — | 4.5 MB | — | — |  |",
		"| admission 1,000 requests (hook-operator only) | sent directly, requests per second ÷ the one-shot hook's | go-resident: ≥ 5.00× |  | — | — | — | 6.00× | — | — | pass |",
		"| admission 1,000 requests (hook-operator only) | through the API server, requests per second ÷ the one-shot hook's (no target) |  |  | — | — | — | 1.10× | — | — |  |",
	)
	if strings.Contains(md, "| idle") {
		t.Errorf("idle did not run:\n%s", md)
	}
	cfg.Hooks = []string{"go"}
	rep.Summaries = summarize(cfg, runs[:2])
	if md := rep.Markdown(); strings.Contains(md, "resident hook process") || strings.Contains(md, "one-shot hook's") {
		t.Errorf("without a resident variant its rows are left out:\n%s", md)
	}
}

func TestBashResidentHookRejectsBadRequest(t *testing.T) {
	h := startBashResident(t)
	reqW, done, stderr := h.requests, h.done, h.stderr
	if _, err := reqW.WriteString("run please\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(stderr.String(), "'run please' on fd 3") {
			t.Errorf("exit %v, stderr %q: want a non-zero exit naming the bad request", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook did not exit within 30 s of a bad request")
	}
}
