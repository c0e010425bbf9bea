package run

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// homeHelperEnv makes the test binary a process that makes its Runner's
// home under the dir it names, with a run dir in it, prints the home's
// path and waits to be killed (TestHomeOfAKilledProcessIsSwept).
const homeHelperEnv = "HOOK_RUN_HOME_HELPER"

func homeHelper(tmpDir string) {
	r := &Runner{TmpDir: tmpDir}
	home, err := r.home.dir(tmpDir)
	if err == nil {
		_, err = newRunDir(home, func(w io.Writer) error { _, err := w.Write([]byte("[]")); return err })
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(home)
	select {}
}

// A Runner's run dirs are in a dir of its own, which a Runner made later
// under the same --tmp-dir removes once the process that made it has died
// (SIGKILL, as a container's restart after the OOM killer: its emptyDir
// kept the run dirs of the process before). Before, every such restart
// left its run dirs for good (the soak counted 35 files after two).
func TestHomeOfAKilledProcessIsSwept(t *testing.T) {
	tmpDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), homeHelperEnv+"="+tmpDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, tmpDir) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the helper printed %q (%v), want its home under %s", line, err, tmpDir)
	}
	helperHome := strings.TrimSpace(line)

	// While the helper lives, a new Runner leaves its home alone.
	live, _ := testRunner(t)
	live.TmpDir = tmpDir
	runOnce(t, live)
	if len(runDirsIn(helperHome)) != 1 {
		t.Fatalf("a Runner swept the home of a live process: %v", runDirsIn(helperHome))
	}
	_ = live.Close()

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	r, _ := testRunner(t)
	r.TmpDir = tmpDir
	runOnce(t, r)
	if _, err := os.Stat(helperHome); !os.IsNotExist(err) {
		t.Errorf("the killed process's home %s is still there after a new Runner's first run (%v)", helperHome, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertEmptyDir(t, tmpDir)
	if entries, _ := os.ReadDir(tmpDir); len(entries) != 0 {
		t.Errorf("Close left %d entries in the temp dir", len(entries))
	}
}

// The sweep removes only what is surely a dead Runner's home: a dir of the
// prefix holding a free lock and nothing but run dirs. A home whose lock is
// held (in this process, through another open file), a dir of the prefix
// without a lock file, one that holds anything else, and every other entry
// of the temp dir stay, however old. (A first version took every
// "hook-operator-*" dir without a lock file and older than a minute for a
// dead home: it removed a soak's working dir in /tmp, named
// hook-operator-soak-*, from under the soak.)
func TestSweepRemovesOnlyDeadHomes(t *testing.T) {
	tmpDir := t.TempDir()
	held := &home{}
	heldPath, err := held.dir(tmpDir)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	mk := func(name string, lock bool, extra string) string {
		p := filepath.Join(tmpDir, name)
		if err := os.MkdirAll(filepath.Join(p, "hook-run-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(p, homeLockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if extra != "" {
			if err := os.WriteFile(filepath.Join(p, extra), []byte("data"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk(homePrefix+"dead", true, "")
	lockless := mk(homePrefix+"lockless", false, "")
	withData := mk(homePrefix+"data", true, "report.md")
	soak := mk("hook-operator-soak-123", false, "replica-0.log")
	other := mk("hook-operator-other", true, "")

	sweepHomes(tmpDir)
	for p, want := range map[string]bool{heldPath: true, dead: false, lockless: true, withData: true, soak: true, other: true} {
		_, err := os.Stat(p)
		if got := err == nil; got != want {
			t.Errorf("after the sweep, %s exists = %v, want %v", filepath.Base(p), got, want)
		}
	}
	if err := held.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(heldPath); !os.IsNotExist(err) {
		t.Errorf("close left the home %s (%v)", heldPath, err)
	}
}

// A missing --tmp-dir is made, private, as shell-operator makes its own
// (/tmp/shell-operator); one that cannot be made fails every run with an
// error that names it.
func TestHomeUnderAMissingTmpDir(t *testing.T) {
	r, _ := testRunner(t)
	r.TmpDir = filepath.Join(t.TempDir(), "missing", "tmp")
	if _, err := r.Run(context.Background(), Request{Hook: bashHook(t, "true\n")}); err != nil {
		t.Fatalf("a run under a missing --tmp-dir: %v", err)
	}
	if fi, err := os.Stat(r.TmpDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the missing --tmp-dir: %v, %v; want it made, 0700", fi, err)
	}

	r, _ = testRunner(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.TmpDir = filepath.Join(file, "tmp")
	_, err := r.Run(context.Background(), Request{Hook: bashHook(t, "true\n")})
	if err == nil || !strings.Contains(err.Error(), "--tmp-dir") || !strings.Contains(err.Error(), "file") {
		t.Fatalf("a run under a --tmp-dir that cannot be made: %v, want an error naming --tmp-dir and the dir", err)
	}
}

func runOnce(t *testing.T, r *Runner) {
	t.Helper()
	if _, err := r.Run(context.Background(), Request{Hook: bashHook(t, "true\n")}); err != nil {
		t.Fatal(err)
	}
}

func runDirsIn(home string) []string {
	dirs, _ := filepath.Glob(filepath.Join(home, "hook-run-*"))
	return dirs
}

// A Close while a run is still in flight leaves that run's dir, and the
// home with its lock file, held until the process exits; the next sweep
// after that removes them. (Removing the lock file at Close left a home
// without one, which the next process's sweep took for one being made: the
// soak found it still there at the end.)
func TestCloseWithARunInFlightLeavesTheHomeToTheSweep(t *testing.T) {
	tmpDir := t.TempDir()
	h := &home{}
	path, err := h.dir(tmpDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(path, "hook-run-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, homeLockName)); err != nil {
		t.Fatalf("close with a run in flight removed the lock file: %v", err)
	}
	sweepHomes(tmpDir)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a sweep removed the home of a live process: %v", err)
	}
	_ = h.lock.Close() // the process exits
	sweepHomes(tmpDir)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the sweep after the process's exit left its home (%v)", err)
	}
}
