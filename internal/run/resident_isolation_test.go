//go:build linux

package run

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// isolationHook is a resident hook that runs cases for each request, as
// long as it lives.
func isolationHook(t *testing.T, cases string) *hook.Hook {
	t.Helper()
	return loopHook(t, "", cases, hook.Settings{Resident: true, ResidentMaxRuns: 1 << 30, ResidentMaxMemory: hook.DefaultResidentMaxMemory})
}

// isolationRunner is a runner that kills a process 200ms after SIGTERM,
// closed (its resident processes ended) when the test ends.
func isolationRunner(t *testing.T) *Runner {
	t.Helper()
	r, _ := testRunner(t)
	r.KillGrace = 200 * time.Millisecond
	t.Cleanup(func() { r.Close() })
	return r
}

// mustRun runs h with the binding contexts ["what"], failing the test
// when the run fails.
func mustRun(t *testing.T, r *Runner, h *hook.Hook, what string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`["` + what + `"]`), Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s run: %v", what, err)
	}
	return res
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// leakRuns is how many runs TestResidentMisbehavingRepliesLeakNothing
// does: 2,000, or RESIDENT_LEAK_RUNS (the 10,000 is measured so).
func leakRuns(t *testing.T) int {
	if v := os.Getenv("RESIDENT_LEAK_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("RESIDENT_LEAK_RUNS=%q: %v", v, err)
		}
		return n
	}
	return 2000
}

// A process whose reply is followed by more lines, or whose reply is
// 1 MiB, is replaced; its reply pipe and whatever read it go with it: the
// operator's fds and goroutines stay flat over many such runs.
func TestResidentMisbehavingRepliesLeakNothing(t *testing.T) {
	r := isolationRunner(t)
	h := isolationHook(t, `  case $what in
    *extra*) printf '{"id":"%s","exitCode":0}\nmore 1\nmore 2\nmore 3\n' "$id" >&4 ;;
    *big*) head -c 1048576 /dev/zero | tr '\0' x >&4; echo >&4 ;;
    *) reply ;;
  esac`)
	ctx := context.Background()
	run := func(what string) error {
		_, err := r.Run(ctx, Request{Hook: h, Contexts: []byte(`["` + what + `"]`), Timeout: time.Minute})
		return err
	}
	for range 20 {
		_ = run("extra")
	}
	settle := func(fds, goroutines int) (int, int) {
		// Stops run in the background: give them time to end.
		var f, g int
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			f, g = openFDs(t), runtime.NumGoroutine()
			if (f <= fds && g <= goroutines) || time.Now().After(deadline) {
				return f, g
			}
		}
	}
	fds0, g0 := settle(0, 0)
	n := leakRuns(t)
	// A run fails for lines written past an earlier reply only when they
	// came after the check before its request: counted, not asserted.
	failed := 0
	for i := range n {
		what := "extra"
		if i%10 == 9 {
			what = "big"
		}
		if err := run(what); err != nil && what == "extra" {
			failed++
		}
	}
	const margin = 10
	fds, g := settle(fds0+margin, g0+margin)
	t.Logf("%d runs: fds %d -> %d, goroutines %d -> %d, hook starts %d, runs with a well-formed reply that failed %d", n, fds0, fds, g0, g, starts(t, h), failed)
	if fds > fds0+margin || g > g0+margin {
		t.Errorf("after %d runs of a hook that writes past its reply: fds %d -> %d, goroutines %d -> %d; want them flat (within %d)", n, fds0, fds, g0, g, margin)
	}
}

// What a process writes after its reply, to the run's files by their path
// or through a file it keeps open, or to its reply pipe, never reaches a
// later run.
func TestResidentLateWritesReachNoLaterRun(t *testing.T) {
	r := isolationRunner(t)
	h := isolationHook(t, `  delete='{"operation":"Delete","kind":"Pod","name":"late"}'
  case $what in
    *by-path*)
      reply
      # A child writes the run's patch file after the reply, by its path.
      # Its dir is gone by then: it makes it again.
      ( sleep 0.3; mkdir -p "${patch%/*}"; echo "$delete" > "$patch"; touch late-written ) &
      ;;
    *keep-open*)
      exec 7>>"$patch"   # kept open past the reply
      reply ;;
    *through-fd*)
      echo "$delete" >&7   # the last run's file
      exec 7>&-
      reply ;;
    *early-reply*)
      reply
      # The next run's reply, before its request: the id is the next one's
      # if ids were counted.
      printf '{"id":"%s","exitCode":0}\n' "$((id + 1))" >&4
      touch early-written ;;
    *) reply ;;
  esac`)
	mustRun(t, r, h, "by-path")
	waitFile(t, filepath.Join(h.Dir, "late-written"))
	if res := mustRun(t, r, h, "ok"); len(res.Operations) > 0 {
		t.Errorf("the run after a late write by path returned %q, want nothing", res.Operations)
	}
	mustRun(t, r, h, "keep-open")
	if res := mustRun(t, r, h, "through-fd"); len(res.Operations) > 0 {
		t.Errorf("a run returned %q, written to the last run's file kept open, want nothing", res.Operations)
	}
	mustRun(t, r, h, "early-reply")
	// Written before the next request (a line that comes during a run,
	// not its reply, fails that run).
	waitFile(t, filepath.Join(h.Dir, "early-written"))
	before := starts(t, h)
	if res := mustRun(t, r, h, "ok"); len(res.Operations) > 0 {
		t.Errorf("the run after an early reply returned %q, want nothing", res.Operations)
	}
	if got := starts(t, h); got != before+1 {
		t.Errorf("a process that wrote past its reply served the next run (%d starts, want %d)", got, before+1)
	}
}

// A line on fd 4 written past a reply, after the check before the next
// request but before the process read that request, fails no run: the
// request is still whole in its pipe, so a new process serves the run.
func TestResidentLineAfterTheRequestWentFailsNoRun(t *testing.T) {
	r := isolationRunner(t)
	h := isolationHook(t, `  reply
  case $what in
    *late-line*)
      until read -t 0 <&3; do sleep 0.01; done   # the next request is there
      echo 'a line past the reply' >&4
      sleep 5 ;; # before it reads the request (the replacement ends it)
  esac`)
	if _, err := runWhat(t, r, h, "late-line", time.Minute); err != nil {
		t.Fatal(err)
	}
	before := starts(t, h)
	if _, err := runWhat(t, r, h, "ok", time.Minute); err != nil {
		t.Errorf("the run after a line written past a reply, before its request was read: %v", err)
	}
	if got := starts(t, h); got != before+1 {
		t.Errorf("%d starts, want %d: the process that wrote past its reply must not serve the run", got, before+1)
	}
}

// What a process started during a run writes while the next run is in
// flight reaches nothing of it: by the last run's path or file name (in
// the dir it works in), by a second name it gave the file, or through the
// file kept open. Each late write waits for "go", which the next run makes,
// and that run replies once they are done.
func TestResidentLateWritesDuringTheNextRun(t *testing.T) {
	r := isolationRunner(t)
	h := isolationHook(t, `  delete='{"operation":"Delete","kind":"Pod","name":"late"}'
  late() { # $1: the late write, done once "go" exists
    local hd=$PWD
    ( cd "${patch%/*}"; while [ ! -e "$hd/go" ]; do sleep 0.02; done
      eval "$1" || true; touch "$hd/late-done" ) 3<&- 4>&- >/dev/null 2>&1 &
  }
  case $what in
    *by-path*) late 'echo "$delete" >> "$patch"' ;;
    *by-name*) late 'echo "$delete" >> "${patch##*/}"; echo "$delete" >> kubernetes-patch' ;;
    *by-link*) : >> "$patch"; ln "$patch" linked; late 'echo "$delete" >> "$hd/linked"' ;;
    *by-fd*) exec 7>>"$patch"; late 'echo "$delete" >&7'; exec 7>&- ;;
    *next*) touch go; while [ ! -e late-done ]; do sleep 0.02; done; rm -f go late-done linked ;;
  esac
  reply`)
	for _, how := range []string{"by-path", "by-name", "by-link", "by-fd"} {
		mustRun(t, r, h, how)
		if res := mustRun(t, r, h, "next"); len(res.Operations) > 0 {
			t.Errorf("a late write %s during the next run reached it: %q", how, res.Operations)
		}
	}
	if n := starts(t, h); n != 1 {
		t.Errorf("the hook started %d times, want once", n)
	}
}

// A run's paths do not carry its id: a process that lists the dir during
// a run (one an earlier run started, holding fd 4) finds nothing there to
// answer the request with.
func TestResidentRunIDIsNotInItsPaths(t *testing.T) {
	r, _ := testRunner(t)
	defer r.Close()
	h := isolationHook(t, `  printf '%s\n' "$line" >> requests
  reply`)
	for range 3 {
		if _, err := runWhat(t, r, h, "ok", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(h.Dir, "requests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var req struct {
			ID  string            `json:"id"`
			Env map[string]string `json:"env"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil || req.ID == "" || len(req.Env) != 6 {
			t.Fatalf("request %q: %v", line, err)
		}
		for k, v := range req.Env {
			if strings.Contains(v, req.ID) {
				t.Errorf("request %s: %s=%s holds the id", req.ID, k, v)
			}
		}
	}
}

// A process that moves its run dir away, or puts a link in its place,
// gets a new dir at its next run, which reads its own contexts and
// returns its own operations; what the link leads to is left as it is.
func TestResidentRunDirMovedOrReplaced(t *testing.T) {
	r := isolationRunner(t)
	h := isolationHook(t, `  case $what in
    *move*) mv "${patch%/*}" moved-$id ;;
    *link*) mkdir -p elsewhere; touch elsewhere/keep; rm -rf "${patch%/*}"; ln -s "$PWD/elsewhere" "${patch%/*}" ;;
    *own*) echo "{\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"$id\"}" > "$patch" ;;
  esac
  reply`)
	for _, what := range []string{"move", "link"} {
		if _, err := runWhat(t, r, h, what, time.Minute); err != nil {
			t.Fatalf("%s run: %v", what, err)
		}
		res, err := runWhat(t, r, h, "own", time.Minute)
		if err != nil {
			t.Fatalf("the run after the %s run: %v", what, err)
		}
		if !strings.Contains(string(res.Operations), `"Delete"`) {
			t.Errorf("the run after the %s run returned %q, want its own Delete", what, res.Operations)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "elsewhere", "keep")); err != nil {
		t.Errorf("the dir a link in place of the run dir led to lost its file: %v", err)
	}
	assertEmptyDir(t, r.TmpDir)
}

// A resident hook's descendants count towards residentMaxMemory, those in
// a session of their own and those whose parent exited included, and end
// with it; one-shot runs' setsid leftovers are swept while it lives.
func TestResidentDescendantsCountAndEndWithIt(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("this test needs python3 for children that hold memory: %v", err)
	}
	r, obs := countedRunner(t)
	r.KillGrace = 200 * time.Millisecond
	defer r.Close()
	hold := `python3 -c 'import time,sys; b=bytearray(range(256))*(128<<10); open(sys.argv[1],"w").write("ready"); time.sleep(600)'`
	h := isolationHook(t, `  case $what in
    *setsid*)
      setsid `+hold+` child1 & echo $! > child1.pid
      # Its parent exits at once: it becomes the operator's.
      ( setsid `+hold+` child2 & echo $! > child2.pid ) ;;
  esac
  reply`)
	h.Config.Settings.ResidentMaxMemory = 48 << 20 // bash, and one child of 32 MiB at most
	if _, err := runWhat(t, r, h, "setsid", 0); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(h.Dir, "child1"))
	waitFile(t, filepath.Join(h.Dir, "child2"))
	pid, child1, child2 := readPid(t, h, "pid"), readPid(t, h, "child1.pid"), readPid(t, h, "child2.pid")
	defer func() { _ = exec.Command("kill", "-9", itoa(child1), itoa(child2)).Run() }()

	r.residents.mu.Lock()
	rp := r.residents.idle[h.Name][0]
	r.residents.mu.Unlock()
	if got := rp.memory(time.Now().Add(time.Hour)); got < 64<<20 {
		t.Errorf("the process's memory with its two setsid children: %d MiB, want 64 MiB or more", got>>20)
	}

	// A one-shot run's setsid leftover goes at its end, though a resident
	// process lives; the resident's own stay.
	oneShot := bashHook(t, "setsid sleep 600 & echo $! > orphan\n")
	if _, err := r.Run(context.Background(), Request{Hook: oneShot}); err != nil {
		t.Fatal(err)
	}
	orphan := readPid(t, oneShot, "orphan")
	sweep(nil)
	assertGone(t, orphan)
	for _, p := range []int{pid, child1, child2} {
		if gone(p) {
			t.Errorf("process %d of the resident hook (itself %d) ended with a one-shot run or the sweep", p, pid)
		}
	}

	// The next run returns it over its memory: recycled, with its tree.
	if _, err := runWhat(t, r, h, "ok", 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{pid, child1, child2} {
		assertGoneWithin(t, p, 10*time.Second)
	}
	if got := obs.String(); !strings.Contains(got, "recycle memory:1") {
		t.Errorf("counted %s, want one recycle for memory", got)
	}
}

// A process that exits right after its reply fails no run: the next run
// starts a new process.
func TestResidentExitAfterReplyFailsNoRun(t *testing.T) {
	r, _ := testRunner(t)
	defer r.Close()
	h := isolationHook(t, `  reply
  exit 0`)
	failed := 0
	for i := range 50 {
		if _, err := runWhat(t, r, h, "ok", 0); err != nil {
			failed++
			t.Logf("run %d: %v", i, err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of 50 runs of a hook that exits after each reply failed, want none", failed)
	}
	if n := starts(t, h); n != 50 {
		t.Errorf("50 runs started %d processes, want 50", n)
	}
}

// assertGoneWithin fails unless pid ends within d.
func assertGoneWithin(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if gone(pid) {
			return
		}
	}
	t.Errorf("process %d is still running", pid)
}
