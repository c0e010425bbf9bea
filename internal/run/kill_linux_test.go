package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hook-operator/hook-operator/internal/poll"
)

// reaped reports whether pid has exited and been reaped: /proc has no
// entry for it, not even a zombie's.
func reaped(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return errors.Is(err, os.ErrNotExist)
}

// assertReaped fails unless each pid has exited and been reaped by the
// time the run returned: no waiting.
func assertReaped(t *testing.T, what string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !reaped(pid) {
			p, _ := readProc(pid)
			t.Errorf("%s: process %d outlived the run (state %c)", what, pid, p.state)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

// A writer that a hook left in a session of its own (setsid), holding
// KUBERNETES_PATCH_PATH open and writing to it by name too, reaches nothing
// of the next run, which gets the same dir (ReuseDirs): the writer is
// killed and reaped when its run ends. Before, it lived on and its
// operations were applied as the next run's.
func TestLeftoverWriterCannotReachTheNextRun(t *testing.T) {
	r, _ := testRunner(t)
	r.ReuseDirs = true
	defer r.Close()
	h := bashHook(t, `
if [ ! -e writer.pid ]; then
  setsid bash -c '
    exec 3>>"$KUBERNETES_PATCH_PATH"
    echo $$ > writer.pid.tmp && mv writer.pid.tmp writer.pid
    while :; do
      echo "{\"operation\":\"Delete\",\"via\":\"fd\"}" >&3
      echo "{\"operation\":\"Delete\",\"via\":\"name\"}" >> "$KUBERNETES_PATCH_PATH"
      sleep 0.01
    done' </dev/null >/dev/null 2>&1 &
  while [ ! -e writer.pid ]; do sleep 0.01; done
  echo first > "$KUBERNETES_PATCH_PATH"
  exit 0
fi
# The second run gives a live writer two seconds to write.
for _ in $(seq 200); do kill -0 "$(cat writer.pid)" 2>/dev/null || break; sleep 0.01; done
echo "dir=$(dirname "$KUBERNETES_PATCH_PATH")" >> "$KUBERNETES_PATCH_PATH"
`)
	first, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	writer := readPid(t, h, "writer.pid")
	assertReaped(t, "the setsid writer", writer)
	if string(first.Operations) == "" {
		t.Error("the first run wrote nothing")
	}
	second, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	got := string(second.Operations)
	if strings.Contains(got, "Delete") || !strings.HasPrefix(got, "dir=") {
		t.Fatalf("the second run's operations are %q: the first run's writer reached them", got)
	}
	if kept, _ := runDirs(r.TmpDir), error(nil); len(kept) != 1 || "dir="+kept[0]+"\n" != got {
		t.Errorf("the second run had %q, the kept dirs are %v: want the first run's dir reused", got, kept)
	}
}

// Whatever way a run ends, what its hook started is killed and reaped
// before Run returns: a child in its process group, a child that started a
// session of its own (setsid), and an orphan (the subshell that started it
// exited) that also did.
func TestLeftoversKilledWhateverTheEnd(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Fatalf("setsid (util-linux) starts a child outside the hook's process group: %v", err)
	}
	for name, tc := range map[string]struct {
		end     string
		timeout time.Duration
	}{
		"success": {end: "exit 0"},
		"failure": {end: "exit 3"},
		// Long enough for the three children to start on a busy
		// machine: each pid file must be written before the deadline.
		"timeout": {end: "sleep 300", timeout: 2 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := testRunner(t)
			// Each child writes its pid once it is where it should be.
			h := bashHook(t, fmt.Sprintf(`
sleep 300 </dev/null >/dev/null 2>&1 &
echo $! > group.pid
%[1]s bash -c 'echo $$ > session.pid && exec sleep 300' </dev/null >/dev/null 2>&1 &
( %[1]s bash -c 'echo $$ > orphan.pid && exec sleep 300' </dev/null >/dev/null 2>&1 & )
while [ ! -s session.pid ] || [ ! -s orphan.pid ]; do sleep 0.01; done
%[2]s
`, setsid, tc.end))
			_, err := r.Run(context.Background(), Request{Hook: h, Timeout: tc.timeout})
			if name == "success" && err != nil {
				t.Fatal(err)
			}
			if name != "success" && err == nil {
				t.Fatal("the run did not fail")
			}
			for _, f := range []string{"group.pid", "session.pid", "orphan.pid"} {
				assertReaped(t, f, readPid(t, h, f))
			}
		})
	}
}

// A run's end kills nothing that may be a live run's: a setsid child of a
// run that started earlier stays until that run ends. The run that ends
// meanwhile cannot tell its own setsid child from the live run's, so it
// leaves it too, and does not reuse its dir; the live run's end kills both.
func TestLeftoversOfALiveRunAreLeftToIt(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := testRunner(t)
	r.ReuseDirs = true
	defer r.Close()
	// The child writes its pid once it is in its own session.
	child := setsid + ` bash -c 'echo $$ > child.pid.tmp && mv child.pid.tmp child.pid && exec sleep 300' </dev/null >/dev/null 2>&1 &
while [ ! -e child.pid ]; do sleep 0.01; done
`
	long := bashHook(t, child+`
while [ ! -e go ]; do sleep 0.01; done
if kill -0 "$(cat child.pid)"; then echo alive; else echo killed; fi > "$KUBERNETES_PATCH_PATH"
`)
	short := bashHook(t, child)
	var wg sync.WaitGroup
	var longRes Result
	var longErr error
	wg.Go(func() { longRes, longErr = r.Run(context.Background(), Request{Hook: long}) })
	waitFor(t, "the long run's child", func() bool { return fileExists(filepath.Join(long.Dir, "child.pid")) })
	if _, err := r.Run(context.Background(), Request{Hook: short}); err != nil {
		t.Fatal(err)
	}
	shortChild := readPid(t, short, "child.pid")
	if reaped(shortChild) {
		t.Error("the short run killed a setsid child it cannot tell from the live run's")
	}
	if kept, _ := runDirs(r.TmpDir), error(nil); len(kept) != 1 {
		t.Errorf("dirs after the short run: %v, want only the long run's (the short run's removed)", kept)
	}
	if err := os.WriteFile(filepath.Join(long.Dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if longErr != nil {
		t.Fatal(longErr)
	}
	if got := strings.TrimSpace(string(longRes.Operations)); got != "alive" {
		t.Errorf("the long run saw its child %s by the short run's end", got)
	}
	assertReaped(t, "the long run's child", readPid(t, long, "child.pid"))
	assertReaped(t, "the short run's child, once no run is live", shortChild)
}

// A zombie child of the operator's own session (as PID 1, any orphan of
// the container) that nobody reaps is reaped by the second sweep that sees
// it; a child someone may still wait for is not reaped by the first.
func TestSweepReapsZombiesNobodyWaitsFor(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waitFor(t, "the child to exit", func() bool { p, err := readProc(pid); return err == nil && p.state == 'Z' })
	_, zombies := sweep(nil)
	if reaped(pid) {
		t.Fatal("the first sweep reaped a zombie that os/exec may be about to wait for")
	}
	if _, ok := zombies[pid]; !ok {
		t.Fatalf("the first sweep did not note the zombie %d: %v", pid, zombies)
	}
	sweep(zombies)
	if !reaped(pid) {
		t.Fatal("the second sweep left the zombie")
	}
}

// withoutSubreaper runs the rest of the test as a process that does not
// adopt its hooks' orphans (as `hook-operator test` and replay run hooks).
func withoutSubreaper(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	subreaping.Store(false)
	t.Cleanup(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		subreaping.Store(true)
	})
}

// Where orphans go elsewhere, a run's end still kills its process group,
// but cannot know that nothing of the run is left: its dir is not reused.
func TestDirNotReusedWithoutASubreaper(t *testing.T) {
	withoutSubreaper(t)
	r, _ := testRunner(t)
	r.ReuseDirs = true
	defer r.Close()
	req := reuseHook(t, `sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$(dirname "$0")/pid"`)
	first := runReport(t, r, req, `[]`)
	assertGone(t, readPid(t, req.Hook, "pid"))
	if _, err := os.Stat(first["dir"]); !os.IsNotExist(err) {
		t.Errorf("the dir %s was kept: %v", first["dir"], err)
	}
	assertEmptyDir(t, r.TmpDir)
}

// Without a subreaper, a setsid child that holds the hook's stdout escapes
// the run's end, and the run waits for its output no longer than the
// output grace, after a timeout as after success.
func TestRunDoesNotWaitForEscapedChildHoldingStdout(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Fatalf("setsid (util-linux) starts a child outside the hook's process group: %v", err)
	}
	withoutSubreaper(t)
	// The timeout case ends by its deadline; the success case gets a
	// deadline its hook meets even on a busy machine, so that an error
	// there means Run waited for the escaped child.
	for name, c := range map[string]struct {
		end     string
		timeout time.Duration
	}{"timeout": {"sleep 300", 300 * time.Millisecond}, "success": {"exit 0", 5 * time.Second}} {
		t.Run(name, func(t *testing.T) {
			r, logs := testRunner(t)
			r.OutputGrace = 200 * time.Millisecond
			h := bashHook(t, setsid+` bash -c 'echo $$ > child.pid.tmp && mv child.pid.tmp child.pid && exec sleep 30' &
while [ ! -e child.pid ]; do sleep 0.01; done
`+c.end+"\n")
			start := time.Now()
			_, err := r.Run(context.Background(), Request{Hook: h, Timeout: c.timeout})
			took := time.Since(start)
			pid := readPid(t, h, "child.pid")
			defer func() { _ = unix.Kill(pid, unix.SIGKILL) }()
			if name == "timeout" && !errors.Is(err, context.DeadlineExceeded) || name == "success" && err != nil {
				t.Fatalf("error = %v", err)
			}
			if took > 10*time.Second {
				t.Errorf("Run took %v: it waited for the escaped child", took)
			}
			if gone(pid) {
				t.Error("the escaped child ended early: the test proves nothing")
			}
			var warned bool
			for _, e := range logs.AllEntries() {
				warned = warned || strings.Contains(e.Message, "still holds stdout or stderr")
			}
			if name == "success" && !warned {
				t.Error("no warning that the output was cut")
			}
		})
	}
}

// A leftover that started a process group of its own (setpgid; here bash's
// set -m) cannot be told from a process the operator started (a --config
// run) and is not killed. It still reaches nothing of a later run: the run
// that left it does not keep its dir, so the file it holds open is one no
// run reads, and the path it remembers is gone.
func TestLeftoverInAGroupOfItsOwnCannotReachTheNextRun(t *testing.T) {
	r, _ := testRunner(t)
	r.ReuseDirs = true
	defer r.Close()
	h := bashHook(t, `
if [ ! -e writer.pid ]; then
  set -m
  bash -c '
    exec 3>>"$KUBERNETES_PATCH_PATH"
    echo $$ > writer.pid.tmp && mv writer.pid.tmp writer.pid
    while :; do
      echo "{\"operation\":\"Delete\",\"via\":\"fd\"}" >&3
      echo "{\"operation\":\"Delete\",\"via\":\"name\"}" >> "$KUBERNETES_PATCH_PATH" || true
      echo beat >> beats
      sleep 0.01
    done' </dev/null >/dev/null 2>&1 &
  set +m
  while [ ! -e writer.pid ]; do sleep 0.01; done
  echo "dir=$(dirname "$KUBERNETES_PATCH_PATH")" > "$KUBERNETES_PATCH_PATH"
  exit 0
fi
# The second run lasts until the writer has gone round its loop twice.
beats=$(wc -l < beats)
for _ in $(seq 1000); do [ "$(wc -l < beats)" -ge $((beats + 2)) ] && break; sleep 0.01; done
echo "dir=$(dirname "$KUBERNETES_PATCH_PATH")" >> "$KUBERNETES_PATCH_PATH"
`)
	first, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	writer := readPid(t, h, "writer.pid")
	t.Cleanup(func() { _ = unix.Kill(writer, unix.SIGKILL) })
	if p, err := readProc(writer); err != nil || p.pgid != writer {
		t.Fatalf("the writer is not in a group of its own: %+v, %v", p, err)
	}
	second, err := r.Run(context.Background(), Request{Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	got := string(second.Operations)
	if strings.Contains(got, "Delete") || !strings.HasPrefix(got, "dir=") || strings.Count(got, "\n") != 1 {
		t.Fatalf("the second run's operations are %q: the first run's writer reached them", got)
	}
	if got == string(first.Operations) {
		t.Errorf("the second run got the first run's dir (%s), which its writer may still reach", got)
	}
	if gone(writer) {
		t.Log("the writer is gone: the run's end killed it after all")
	}
}
