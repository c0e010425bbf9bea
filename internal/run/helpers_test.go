package run

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/poll"
)

// testRunner returns a Runner whose temp dirs go to a fresh dir and whose
// log records the test can read.
func testRunner(t *testing.T) (*Runner, *logtest.Hook) {
	t.Helper()
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	logger.SetLevel(logrus.TraceLevel)
	return &Runner{TmpDir: t.TempDir(), Env: os.Environ(), Log: logger}, logtest.NewLocal(logger)
}

// bashHook writes a bash script into a fresh dir and returns it as a hook.
func bashHook(t *testing.T, body string) *hook.Hook {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "hook.sh")
	if err := os.WriteFile(path, []byte("#!/bin/bash\nset -euo pipefail\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &hook.Hook{Name: "test/hook.sh", Path: path, Dir: dir}
}

// assertEmptyDir fails unless dir exists and holds nothing: every run's temp
// dir has been removed.
func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), homePrefix) {
			t.Errorf("left behind in %s: %s", dir, e.Name())
			continue
		}
		// The Runner's own dir (home.go) stays until Close, holding its
		// lock file only.
		inside, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e2 := range inside {
			if e2.Name() != homeLockName {
				t.Errorf("left behind in %s: %s/%s", dir, e.Name(), e2.Name())
			}
		}
	}
}

// runDirs returns the run dirs under tmpDir: those in the Runners' own
// dirs (home.go).
func runDirs(tmpDir string) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmpDir, homePrefix+"*", "hook-run-*"))
	return dirs
}

// tmpDirOf returns the --tmp-dir a run dir is under: the parent of its
// Runner's own dir.
func tmpDirOf(runDir string) string {
	return filepath.Dir(filepath.Dir(runDir))
}

// readPid reads a pid a hook wrote to a file in its folder.
func readPid(t *testing.T, h *hook.Hook, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Dir, name))
	if err != nil {
		t.Fatalf("the hook wrote no %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid has ended: no such process, or a zombie waiting
// for a reaper that is not ours.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// assertGone fails unless pid ends within a second.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if gone(pid) {
			return
		}
	}
	t.Errorf("process %d is still running", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// outputEntries returns the log records of hook output lines.
func outputEntries(h *logtest.Hook) []logrus.Entry {
	var out []logrus.Entry
	for _, e := range h.AllEntries() {
		if _, ok := e.Data["output"]; ok {
			out = append(out, *e)
		}
	}
	return out
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// waitFile waits up to 30 seconds for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	poll.Until(t, 30*time.Second, path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}
