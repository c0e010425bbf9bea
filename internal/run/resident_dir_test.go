//go:build linux

package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A resident run's files have new paths every run; a file is the last
// run's only when nothing but the operator can reach it (not open
// elsewhere, no second name, an output left empty): those are new. Where
// the file system grants no leases, every file is new.
func TestResidentDirKeepsOnlyFilesNothingElseReaches(t *testing.T) {
	d, err := newResidentDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.remove()
	first, err := d.prepare("1", Request{Contexts: []byte(`["first run's contexts"]`)}.contextsWriter())
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(first.metrics, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.WriteFile(first.patch, []byte("written"), 0o600); err != nil {
		t.Fatal(err)
	}
	linkDir := t.TempDir()
	if err := os.Link(first.validating, filepath.Join(linkDir, "second-name")); err != nil {
		t.Fatal(err)
	}
	// A mark on each of the first run's files tells a file kept from a
	// new one (whose inode number may be the one just freed).
	const mark = "user.hook-operator-test"
	files := func(d *runDir) map[string]string {
		return map[string]string{"contexts": d.contexts, "patch": d.patch, "metrics": d.metrics, "validating": d.validating, "conversion": d.conversion}
	}
	for _, p := range files(first) {
		if err := unix.Setxattr(p, mark, []byte("first"), 0); err != nil {
			t.Fatalf("marking %s: %v", p, err)
		}
	}

	second, err := d.prepare("2", Request{Contexts: []byte(`["2nd"]`)}.contextsWriter())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{first.contexts, first.patch, first.metrics, first.validating, first.conversion} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the first run's path %s still leads somewhere (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(second.contexts); err != nil || string(b) != `["2nd"]` {
		t.Errorf("the second run's contexts: %q, %v; want [\"2nd\"]", b, err)
	}
	for _, p := range []string{second.patch, second.metrics, second.validating, second.conversion} {
		if st, err := os.Lstat(p); err != nil || st.Size() != 0 || st.Mode() != 0o600 {
			t.Errorf("the second run's %s: %v, %v; want an empty 0600 file", p, st, err)
		}
	}
	if _, err := held.WriteString("late"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(second.metrics); err != nil || st.Size() != 0 {
		t.Errorf("a write through the first run's metrics file, kept open, reached the second run's")
	}
	if err := os.WriteFile(filepath.Join(linkDir, "second-name"), []byte("late"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(second.validating); err != nil || st.Size() != 0 {
		t.Errorf("a write through a second name of the first run's validating file reached the second run's")
	}
	kept := map[string]bool{}
	for name, p := range files(second) {
		_, err := unix.Getxattr(p, mark, make([]byte, 16))
		kept[name] = err == nil
	}
	for _, name := range []string{"patch", "metrics", "validating"} {
		if kept[name] {
			t.Errorf("the %s file is the first run's, which was written to, open or linked", name)
		}
	}
	if leases := leasesWork(t); kept["contexts"] != leases || kept["conversion"] != leases {
		t.Errorf("the files nothing reached are the first run's: contexts %v, conversion %v; leases on this file system: %v (want the same)",
			kept["contexts"], kept["conversion"], leases)
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
	d, err := newResidentDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.remove()
	ctx := Request{Contexts: []byte(`["a Secret's data"]`)}.contextsWriter()
	run, err := d.prepare("1", ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.patch, []byte("written"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.done()
	for deadline := time.Now().Add(30 * time.Second); exists(run.contexts) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	for p, want := range map[string]bool{run.contexts: false, run.patch: false, run.metrics: true, run.validating: true, run.conversion: true} {
		if got := exists(p); got != want {
			t.Errorf("with the process idle, %s exists: %v, want %v", p, got, want)
		}
	}

	next, err := d.prepare("2", ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.done()
	inFlight, err := d.prepare("3", ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(filesLinger + 500*time.Millisecond) // the timer of run 2 has had its time
	if !exists(inFlight.contexts) {
		t.Errorf("the contexts of a run in flight were removed (run 2's were %s)", next.contexts)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
