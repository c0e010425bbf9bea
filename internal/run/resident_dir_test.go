//go:build linux

package run

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A resident run's files have new paths every run. The contexts are the
// last run's file only when nothing but the operator can reach it (not
// open elsewhere, no second name); where the file system grants no
// leases, they are new. The output files are not made: what the hook
// writes is its own, and the next run removes the last run's, so a file
// kept open, a second name or a late write by path reaches no later run.
func TestResidentDirKeepsOnlyFilesNothingElseReaches(t *testing.T) {
	d := testResidentDir(t)
	first := mustPrepare(t, d, "1", `["first run's contexts"]`)
	for _, p := range []string{first.patch, first.metrics, first.validating, first.conversion} {
		if exists(p) {
			t.Errorf("the first run's output %s exists before the hook wrote it", p)
		}
	}
	// The hook writes its outputs, keeps one open, gives one a second name.
	held, err := os.OpenFile(first.metrics, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.WriteFile(first.patch, []byte("written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.validating, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	linkDir := t.TempDir()
	if err := os.Link(first.validating, filepath.Join(linkDir, "second-name")); err != nil {
		t.Fatal(err)
	}
	// A mark on the first run's contexts tells the file kept from a new
	// one (whose inode number may be the one just freed).
	const mark = "user.hook-operator-test"
	if err := unix.Setxattr(first.contexts, mark, []byte("first"), 0); err != nil {
		t.Fatalf("marking %s: %v", first.contexts, err)
	}

	second := mustPrepare(t, d, "2", `["2nd"]`)
	for _, p := range []string{first.contexts, first.patch, first.metrics, first.validating, first.conversion} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the first run's path %s still leads somewhere (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(second.contexts); err != nil || string(b) != `["2nd"]` {
		t.Errorf("the second run's contexts: %q, %v; want [\"2nd\"]", b, err)
	}
	// Late writes: through the open file, the second name, and by the
	// first run's paths.
	if _, err := held.WriteString("late"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(linkDir, "second-name"), []byte("late"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.conversion, []byte("late"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{second.patch, second.metrics, second.validating, second.conversion} {
		if exists(p) {
			t.Errorf("the second run's output %s exists before the hook wrote it: a late write reached it", p)
		}
	}
	_, err = unix.Getxattr(second.contexts, mark, make([]byte, 16))
	if kept, leases := err == nil, leasesWork(t); kept != leases {
		t.Errorf("the second run's contexts are the first run's file: %v; leases on this file system: %v (want the same)", kept, leases)
	}
	// The contexts file open elsewhere is not kept.
	other, err := os.Open(second.contexts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	third := mustPrepare(t, d, "3", `["3rd"]`)
	if b, err := io.ReadAll(other); err != nil || string(b) != `["2nd"]` {
		t.Errorf("the second run's contexts, held open: %q, %v; the third run's were written over them", b, err)
	}
	if b, err := os.ReadFile(third.contexts); err != nil || string(b) != `["3rd"]` {
		t.Errorf("the third run's contexts: %q, %v", b, err)
	}
}

// leasesWork reports whether the file system of t's temp dir grants a
// write lease on a file open once.
func leasesWork(t *testing.T) bool {
	f, err := os.Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return soleOpener(int(f.Fd()))
}

// soleOpener says no while another open file refers to the same file
// (on a file system with leases, as Linux's local ones are).
func TestSoleOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !soleOpener(int(f.Fd())) {
		t.Fatal("a file open once: soleOpener says another has it open")
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY} {
		other, err := os.OpenFile(path, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		if soleOpener(int(f.Fd())) {
			t.Errorf("with the file open again (flags %#x), soleOpener says no other has it open", flag)
		}
		_ = other.Close()
	}
	if !soleOpener(int(f.Fd())) {
		t.Error("once the other closed it, soleOpener still says another has it open")
	}
}

// Once a resident process is idle, its last run's contexts and what that
// run wrote are removed (filesLinger); a run in flight keeps its files.
func TestResidentDirForgetsTheLastRunsFilesWhenIdle(t *testing.T) {
	d := testResidentDir(t)
	const ctx = `["a Secret's data"]`
	run := mustPrepare(t, d, "1", ctx)
	if err := os.WriteFile(run.patch, []byte("written"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.done()
	// forget removes the files one by one in its timer's goroutine: wait
	// for all of them, not the first (a loaded machine shows the gap).
	files := []string{run.contexts, run.patch, run.metrics, run.validating, run.conversion}
	anyLeft := func() bool { return slices.ContainsFunc(files, exists) }
	for deadline := time.Now().Add(30 * time.Second); anyLeft() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range files {
		if exists(p) {
			t.Errorf("with the process idle for 30 s, %s still exists", p)
		}
	}

	next := mustPrepare(t, d, "2", ctx)
	d.done()
	inFlight := mustPrepare(t, d, "3", ctx)
	time.Sleep(filesLinger + 500*time.Millisecond) // the timer of run 2 has had its time
	if !exists(inFlight.contexts) {
		t.Errorf("the contexts of a run in flight were removed (run 2's were %s)", next.contexts)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// testResidentDir returns a resident dir in a temp dir of t's, removed when
// t ends.
func testResidentDir(t *testing.T) *residentDir {
	t.Helper()
	d, err := newResidentDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.remove() })
	return d
}

// mustPrepare prepares the files of the run whose token is token, with
// contexts as its binding contexts.
func mustPrepare(t *testing.T, d *residentDir, token, contexts string) *runDir {
	t.Helper()
	run, err := d.prepare(token, Request{Contexts: []byte(contexts)}.contextsWriter())
	if err != nil {
		t.Fatal(err)
	}
	return run
}
