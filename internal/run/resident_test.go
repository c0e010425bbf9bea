//go:build linux

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// residentLoop is how the resident hooks of these tests start: it writes
// the process's pid to "pid" and appends it to "starts"; then, for each
// request, it sets id, ctx and patch from the request and what to the
// run's binding contexts, and defines reply, which answers the request
// with exit code 0. The loop's body and its "done" follow it.
const residentLoop = `echo $$ > pid
echo $$ >> starts
while IFS= read -r line <&3; do
  [[ $line =~ \"id\":\"([0-9]+)\" ]] && id=${BASH_REMATCH[1]}
  [[ $line =~ \"BINDING_CONTEXT_PATH\":\"([^\"]+)\" ]] && ctx=${BASH_REMATCH[1]}
  [[ $line =~ \"KUBERNETES_PATCH_PATH\":\"([^\"]+)\" ]] && patch=${BASH_REMATCH[1]}
  what=$(cat "$ctx")
  reply() { printf '{"id":"%s","exitCode":0}\n' "$id" >&4; }
`

// loopHook returns a bash hook with settings that runs start, then
// residentLoop with body as the loop's body.
func loopHook(t *testing.T, start, body string, settings hook.Settings) *hook.Hook {
	t.Helper()
	h := bashHook(t, start+residentLoop+body+"\ndone\n")
	h.Config.Settings = settings
	return h
}

// residentBody is a resident bash hook speaking the protocol with regexes,
// as docs/running.md shows. It appends its pid to "starts" when it starts, and
// the paths of the run's contexts and patch files and the size of the patch
// file at the run's start ("none": no file) to "dirs"; its binding contexts say what a run
// does: ok, fail, crash, hang, bad (reply), quit (reply, then exit) or
// litter (leave a file in the dir).
const residentBody = residentLoop + `  echo "run $id: $what"
  echo "$ctx $patch $(stat -c %s "$patch" 2>/dev/null || echo none)" >> dirs
  code=0
  case $what in
    *crash*) kill -9 $$ ;;
    *quit*) reply; exit 0 ;;
    *litter*) touch "${ctx%/*}/litter" ;;
    *hang*) sleep 600 ;;
    *bad*) echo 'not json' >&4; continue ;;
    *fail*) code=3; echo "failing" >&2 ;;
  esac
  echo "{\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"$id\"}" > "$patch"
  printf '{"id":"%s","exitCode":%d}\n' "$id" "$code" >&4
done
echo "EOF on fd 3" > stopped
`

func residentHook(t *testing.T, maxRuns int) *hook.Hook {
	h := bashHook(t, residentBody)
	h.Config.Settings = hook.Settings{Resident: true, ResidentMaxRuns: maxRuns, ResidentMaxMemory: hook.DefaultResidentMaxMemory}
	return h
}

// countedRunner returns testRunner's Runner with a counted as its
// ProcessObserver.
func countedRunner(t *testing.T) (*Runner, *counted) {
	t.Helper()
	r, _ := testRunner(t)
	obs := &counted{}
	r.Processes = obs
	return r, obs
}

// counted records what a Runner tells its ProcessObserver.
type counted struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counted) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counted) ProcessStarted(string)             { c.add("start") }
func (c *counted) ProcessRestarted(_, reason string) { c.add("restart " + reason) }
func (c *counted) ProcessRecycled(_, reason string)  { c.add("recycle " + reason) }
func (c *counted) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.n)
}

func starts(t *testing.T, h *hook.Hook) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(h.Dir, "starts"))
	return len(strings.Fields(string(b)))
}

func runWhat(t *testing.T, r *Runner, h *hook.Hook, what string, timeout time.Duration) (Result, error) {
	t.Helper()
	return r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`["` + what + `"]`), Binding: "b", Queue: "q", Timeout: timeout})
}

func TestResidentOneProcessManyRuns(t *testing.T) {
	r, logs := testRunner(t)
	h := residentHook(t, 0)
	ids := map[string]bool{}
	var id string
	for i := 1; i <= 30; i++ {
		res, err := runWhat(t, r, h, "ok", 0)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		// The hook names the Pod by the run's id: a new one each run.
		_, id, _ = strings.Cut(string(res.Operations), `"name":"`)
		id, _, _ = strings.Cut(id, `"`)
		if id == "" || ids[id] {
			t.Fatalf("run %d: operations %q, want the run's own, named by a new id", i, res.Operations)
		}
		ids[id] = true
	}
	if n := starts(t, h); n != 1 {
		t.Errorf("30 runs started the hook %d times, want 1", n)
	}
	var found bool
	for _, e := range outputEntries(logs) {
		if e.Message == "run "+id+": [\"ok\"]" {
			found = e.Data["binding"] == "b" && e.Data["queue"] == "q" && e.Data["hook"] == h.Name
		}
	}
	if !found {
		t.Errorf("no log line of run 30 with the run's hook, binding and queue")
	}
	pid := readPid(t, h, "pid")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid)
	if b, err := os.ReadFile(filepath.Join(h.Dir, "stopped")); err != nil || len(b) == 0 {
		t.Errorf("Close did not let the hook see EOF on fd 3 and exit: %v", err)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestResidentFaults(t *testing.T) {
	r, obs := countedRunner(t)
	r.KillGrace = 200 * time.Millisecond
	defer r.Close()
	h := residentHook(t, 0)
	mustRun := func(what string) {
		t.Helper()
		if _, err := runWhat(t, r, h, what, 0); err != nil {
			t.Fatalf("%s run: %v", what, err)
		}
	}
	mustRun("ok")

	// A failed run keeps the process.
	if _, err := runWhat(t, r, h, "fail", 0); err == nil || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "failing") {
		t.Errorf("fail run: error %v, want exit code 3 with the stderr tail", err)
	}
	mustRun("ok")
	if n := starts(t, h); n != 1 {
		t.Fatalf("a failed run replaced the process (%d starts)", n)
	}

	// A crash fails the run; the next run gets a new process.
	old := readPid(t, h, "pid")
	if _, err := runWhat(t, r, h, "crash", 0); !errors.Is(err, errExited) {
		t.Errorf("crash run: error %v, want the process's exit", err)
	}
	mustRun("ok")
	if n := starts(t, h); n != 2 {
		t.Errorf("after a crash: %d starts, want 2", n)
	}
	assertGone(t, old)

	// A hanging run times out; its process is killed and replaced.
	old = readPid(t, h, "pid")
	if _, err := runWhat(t, r, h, "hang", 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang run: error %v, want a timeout", err)
	}
	assertGone(t, old)
	mustRun("ok")
	if n := starts(t, h); n != 3 {
		t.Errorf("after a timeout: %d starts, want 3", n)
	}

	// A bad reply fails the run and replaces the process.
	if _, err := runWhat(t, r, h, "bad", 0); err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Errorf("bad reply: error %v, want a protocol error", err)
	}
	mustRun("ok")
	if n := starts(t, h); n != 4 {
		t.Errorf("after a bad reply: %d starts, want 4", n)
	}

	// A process that exits between runs is restarted at the next run.
	mustRun("quit")
	waitExited(t, r, h)
	mustRun("ok")
	if n := starts(t, h); n != 5 {
		t.Errorf("after an exit between runs: %d starts, want 5", n)
	}

	// A changed executable is restarted before the next run.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(h.Path, later, later); err != nil {
		t.Fatal(err)
	}
	mustRun("ok")
	if n := starts(t, h); n != 6 {
		t.Errorf("after the executable changed: %d starts, want 6", n)
	}
	if got, want := obs.String(), "map[recycle changed:1 restart crashed:1 restart exited:1 restart protocol:1 restart timeout:1 start:6]"; got != want {
		t.Errorf("counted %s, want %s", got, want)
	}
}

// waitExited waits until the idle process of h has exited and its exit
// has been seen (what takeResident checks).
func waitExited(t *testing.T, r *Runner, h *hook.Hook) {
	t.Helper()
	r.residents.mu.Lock()
	idle := r.residents.idle[h.Name]
	r.residents.mu.Unlock()
	if len(idle) != 1 {
		t.Fatalf("%d idle processes of %s, want 1", len(idle), h.Name)
	}
	select {
	case <-idle[0].exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit")
	}
}

// Every resident run has files of its own: new paths, no patch file until
// the hook writes one, its own contexts, whatever the process left in its dir; a
// process's dir goes with it.
func TestResidentRunFilesAreTheRuns(t *testing.T) {
	r, logs := testRunner(t)
	r.KillGrace = 200 * time.Millisecond
	h := residentHook(t, 0)
	runs := []string{"ok", "long ok", "litter", "ok", "crash", "ok"}
	for _, what := range runs {
		_, _ = runWhat(t, r, h, what, 0)
	}
	var seen []string
	for _, e := range outputEntries(logs) {
		if _, what, ok := strings.Cut(e.Message, ": "); ok && strings.HasPrefix(e.Message, "run ") {
			seen = append(seen, what)
		}
	}
	if got, want := strings.Join(seen, " "), `["ok"] ["long ok"] ["litter"] ["ok"] ["crash"] ["ok"]`; got != want {
		t.Errorf("the runs read the contexts %s, want %s", got, want)
	}
	b, err := os.ReadFile(filepath.Join(h.Dir, "dirs"))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("line %q of dirs is not: contexts patch size", line)
		}
		if f[2] != "none" {
			t.Errorf("run %d found a patch file of %s bytes at its start, want none (the hook makes what it writes)", i+1, f[2])
		}
		for _, p := range f[:2] {
			if paths[p] {
				t.Errorf("run %d has the path %s of an earlier run", i+1, p)
			}
			paths[p] = true
		}
	}
	if len(lines) != len(runs) {
		t.Fatalf("the hook saw %d runs, want %d:\n%s", len(lines), len(runs), b)
	}
	// The crashed process's dir is removed as it stops, in the background.
	for deadline := time.Now().Add(20 * time.Second); len(runDirs(r.TmpDir)) > 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if dirs := runDirs(r.TmpDir); len(dirs) != 1 {
		t.Errorf("with one process left, the run dirs are %v, want its own", dirs)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmptyDir(t, r.TmpDir)
}

func TestResidentRecycledAfterMaxRuns(t *testing.T) {
	r, obs := countedRunner(t)
	defer r.Close()
	h := residentHook(t, 2)
	for i := range 5 {
		res, err := runWhat(t, r, h, "ok", 0)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		// Its process, recycled as the run ends, leaves its output.
		if !strings.Contains(string(res.Operations), `"Delete"`) {
			t.Errorf("run %d returned %q, want its Delete", i, res.Operations)
		}
	}
	if n := starts(t, h); n != 3 {
		t.Errorf("5 runs with residentMaxRuns 2: %d starts, want 3", n)
	}
	if got, want := obs.String(), "map[recycle runs:2 start:3]"; got != want {
		t.Errorf("counted %s, want %s", got, want)
	}
}

func TestResidentRecycledAtMaxMemory(t *testing.T) {
	r, obs := countedRunner(t)
	defer r.Close()
	h := residentHook(t, 0)
	h.Config.Settings.ResidentMaxMemory = 1 << 20 // below any bash's RSS
	for i := range 3 {
		if _, err := runWhat(t, r, h, "ok", 0); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if n := starts(t, h); n != 3 {
		t.Errorf("3 runs over residentMaxMemory: %d starts, want 3 (one per run)", n)
	}
	if got, want := obs.String(), "map[recycle memory:3 start:3]"; got != want {
		t.Errorf("counted %s, want %s", got, want)
	}
}

func TestParseReply(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":"7","exitCode":0}` + "\n":       "",
		`{"id":"7","exitCode":2}` + "\n":       "",
		`{"id":"8","exitCode":0}` + "\n":       `answers run "8", but run "7" is in flight`,
		`{"id":"7"}` + "\n":                    "lacks id or exitCode",
		`{"id":7,"exitCode":0}` + "\n":         "is not",
		`{"id":"7","exitCode":0,"x":1}` + "\n": "is not",
		`{"id":"7","exitCode":0}`:              "not a line",
		"done\n":                               "is not",
	} {
		_, err := parseReply(line, "7")
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", line, err, want)
		}
	}
}

func TestRequestLine(t *testing.T) {
	d := &runDir{contexts: "/t/c", patch: "/t/p", metrics: "/t/m", validating: "/t/v", conversion: "/t/x"}
	want := `{"id":"12","env":{"BINDING_CONTEXT_PATH":"/t/c","KUBERNETES_PATCH_PATH":"/t/p","METRICS_PATH":"/t/m",` +
		`"VALIDATING_RESPONSE_PATH":"/t/v","ADMISSION_RESPONSE_PATH":"/t/v","CONVERSION_RESPONSE_PATH":"/t/x"}}` + "\n"
	if got := string(requestLine("12", d, nil)); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
	d.spans = "/t/s"
	tr := &Trace{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	want = strings.TrimSuffix(want, "}}\n") + `,"TRACEPARENT":"` + tr.Parent + `","TRACE_SPANS_PATH":"/t/s"}}` + "\n"
	if got := string(requestLine("12", d, tr)); got != want {
		t.Errorf("request with a trace\n got %s\nwant %s", got, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Runs at once start a process each; only settings.parallelism of them stay
// for later runs.
// Runs at once beyond parallelism start more processes; those stay while
// runs keep coming and stop once idle for surplusIdle, the longest idle
// first, down to parallelism.
func TestResidentKeepsParallelismProcesses(t *testing.T) {
	r, _ := testRunner(t)
	r.residents.surplusIdle = 500 * time.Millisecond
	defer r.Close()
	// Every run waits until all three are in flight, so three processes
	// serve them.
	h := loopHook(t, "", `  touch "running.$$"
  while (( $(ls running.* | wc -l) < 3 )) && [[ $what == '["wait"]' ]]; do sleep 0.01; done
  reply`, hook.Settings{Resident: true, Parallelism: 2, ResidentMaxRuns: 100, ResidentMaxMemory: hook.DefaultResidentMaxMemory})
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`["wait"]`), Timeout: time.Minute})
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := starts(t, h); n != 3 {
		t.Fatalf("3 runs at once: %d starts, want 3", n)
	}
	idle := func() int {
		r.residents.mu.Lock()
		defer r.residents.mu.Unlock()
		return len(r.residents.idle[h.Name])
	}
	if n := idle(); n != 3 {
		t.Errorf("right after the runs, %d processes idle, want the 3 that ran them", n)
	}
	for i := range 4 {
		if _, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`["go"]`)}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if n := starts(t, h); n != 3 {
		t.Errorf("later runs started %d more processes, want none", n-3)
	}
	deadline := time.Now().Add(10 * time.Second)
	for idle() > 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := idle(); n != 2 {
		t.Errorf("%d processes kept after they were idle, want settings.parallelism 2", n)
	}
	// One idle since the runs at once went, not the one the later runs
	// used (taken from the end, the last returned).
	r.residents.mu.Lock()
	var runs []int
	for _, rp := range r.residents.idle[h.Name] {
		runs = append(runs, rp.runs)
	}
	r.residents.mu.Unlock()
	if !slices.Contains(runs, 5) {
		t.Errorf("the processes kept had served %v runs, want one that served the 4 later runs too (5)", runs)
	}
}

// One-shot runs count a process start each.
func TestOneShotCountsProcessStarts(t *testing.T) {
	r, obs := countedRunner(t)
	h := bashHook(t, "true\n")
	for range 3 {
		if _, err := r.Run(context.Background(), Request{Hook: h}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := obs.String(), "map[start:3]"; got != want {
		t.Errorf("counted %s, want %s", got, want)
	}
}

// RecycleResident (a reload) stops the idle processes now and a busy one
// when its run ends; the next run starts a new process.
func TestResidentRecycleOnReload(t *testing.T) {
	r, obs := countedRunner(t)
	defer r.Close()
	h := loopHook(t, "", `  if [[ $what == '["wait"]' ]]; then touch running; while [[ ! -e release ]]; do sleep 0.01; done; rm -f running release; fi
  reply`, hook.Settings{Resident: true, ResidentMaxRuns: 100, ResidentMaxMemory: hook.DefaultResidentMaxMemory})
	run := func(what string) error {
		_, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`["` + what + `"]`), Timeout: time.Minute})
		return err
	}
	if err := run("go"); err != nil {
		t.Fatal(err)
	}
	r.RecycleResident(h.Name, "reload") // idle
	if err := run("go"); err != nil {
		t.Fatal(err)
	}
	if n := starts(t, h); n != 2 {
		t.Fatalf("after recycling the idle process: %d starts, want 2", n)
	}
	done := make(chan error, 1)
	go func() { done <- run("wait") }()
	waitFile(t, filepath.Join(h.Dir, "running"))
	r.RecycleResident(h.Name, "reload") // busy
	if err := os.WriteFile(filepath.Join(h.Dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the run in flight failed: %v", err)
	}
	if err := run("go"); err != nil {
		t.Fatal(err)
	}
	if n := starts(t, h); n != 3 {
		t.Errorf("after recycling a busy process: %d starts, want 3", n)
	}
	if got, want := obs.String(), "map[recycle reload:2 start:3]"; got != want {
		t.Errorf("counted %s, want %s", got, want)
	}
	r.RecycleResident(h.Name, "") // the hook is gone: stopped, not counted
	if got, want := obs.String(), "map[recycle reload:2 start:3]"; got != want {
		t.Errorf("after removing the hook: counted %s, want %s", got, want)
	}
}

// descendantsRSS counts the processes below the hook in its group.
func TestDescendantsRSSCountsTheGroup(t *testing.T) {
	r, _ := testRunner(t)
	defer r.Close()
	// A child in the group that holds 32 MiB, reported once it has them.
	h := loopHook(t, `python3 -c 'import time,sys; b=bytearray(range(256))*(128<<10); open("child","w").write("ready"); time.sleep(600)' &
`, "  reply", hook.Settings{Resident: true, ResidentMaxRuns: 100, ResidentMaxMemory: hook.DefaultResidentMaxMemory})
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("this test needs python3 for a child that holds memory: %v", err)
	}
	if _, err := r.Run(context.Background(), Request{Hook: h}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(h.Dir, "child"))
	pid := readPid(t, h, "pid")
	r.residents.mu.Lock()
	tag := r.residents.idle[h.Name][0].tag
	r.residents.mu.Unlock()
	if got := descendantsRSS(pid, tag); got < 32<<20 {
		t.Errorf("descendantsRSS = %d, want at least the child's 32 MiB", got)
	}
}

// ownRSS reads the process's statm through the file opened at its start,
// and reads nothing once the process has ended, whatever takes its pid.
func TestOwnRSSFollowsTheProcess(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := openStatm(cmd.Process.Pid)
	if f == nil {
		t.Fatal("cannot open the statm of a process just started")
	}
	defer f.Close()
	if got := ownRSS(f); got <= 0 {
		t.Errorf("ownRSS of a running sleep = %d, want its RSS", got)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := ownRSS(f); got != 0 {
		t.Errorf("ownRSS after the process ended = %d, want 0", got)
	}
}
