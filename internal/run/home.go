package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A Runner makes its run dirs inside a dir of its own under TmpDir, its
// home ("hook-operator-runs-*"), which it holds locked (flock on its .lock file)
// for as long as the process lives. A process that is killed (SIGKILL, the
// OOM killer, a node's restart of the container with its emptyDir kept)
// leaves its home behind with the run dirs in it; the next Runner to make
// its own home under the same TmpDir removes every home whose lock it can
// take, since the kernel releases a lock when its holder dies. The sweep
// never touches anything else under TmpDir (sweepHomes). A pid would
// not do: a container's operator is pid 1 again after a restart.
const (
	homePrefix   = "hook-operator-runs-"
	homeLockName = ".lock"
	// homeSweepEvery is how often, at most, a Runner sweeps again, when it
	// makes a run dir: a process killed while this one was already running
	// (two operators sharing a --tmp-dir) leaves its home behind too.
	homeSweepEvery = 10 * time.Minute
)

// home is a Runner's own dir under its TmpDir, made at its first run.
type home struct {
	mu      sync.Mutex
	path    string
	lock    *os.File // held open (and flocked) until close; close-on-exec
	err     error    // why the home could not be made
	sweptAt time.Time
}

// dir returns the home's path, making it, and sweeping the homes of dead
// processes, the first time. An error is kept: every later run fails the
// same way (a --tmp-dir that cannot be written to does not heal).
func (h *home) dir(parent string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if parent == "" {
		parent = os.TempDir()
	}
	if h.path != "" {
		if time.Since(h.sweptAt) > homeSweepEvery {
			h.sweptAt = time.Now()
			sweepHomes(parent) // ours is locked: left alone
		}
		return h.path, nil
	}
	if h.err != nil {
		return "", h.err
	}
	// Sweep before making our own: a home whose lock is free is not ours
	// yet, and would be taken for a dead process's.
	h.sweptAt = time.Now()
	sweepHomes(parent)
	for range 3 {
		path, lock, err := makeHome(parent)
		if err == nil {
			h.path, h.lock = path, lock
			return path, nil
		}
		if !errors.Is(err, errHomeTaken) {
			h.err = err
			return "", err
		}
	}
	h.err = fmt.Errorf("making a private dir under %s: another process removed it three times", parent)
	return "", h.err
}

// errHomeTaken: a sweep of another Runner removed the home being made,
// between its lock file's creation and its lock.
var errHomeTaken = errors.New("home removed while it was made")

// makeHome makes a 0700 home under parent and locks it. A parent that
// does not exist is made (0700), as shell-operator makes its --tmp-dir
// (/tmp/shell-operator by default), so that its settings work unchanged.
func makeHome(parent string) (string, *os.File, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", nil, fmt.Errorf("making the temp dir (--tmp-dir): %w", err)
	}
	path, err := os.MkdirTemp(parent, homePrefix)
	if err != nil {
		return "", nil, fmt.Errorf("making a private dir under the temp dir (--tmp-dir): %w", err)
	}
	name := filepath.Join(path, homeLockName)
	lock, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		_ = os.RemoveAll(path)
		return "", nil, fmt.Errorf("making a private dir under the temp dir (--tmp-dir): %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// Another Runner's sweep holds it (and removes the dir).
		_ = lock.Close()
		return "", nil, errHomeTaken
	}
	// The sweep may have taken the lock, removed the dir and let go of the
	// lock before we took it: the lock is ours only if the file is still
	// the one at its name.
	held, err1 := lock.Stat()
	named, err2 := os.Lstat(name)
	if err1 != nil || err2 != nil || !os.SameFile(held, named) {
		_ = lock.Close()
		return "", nil, errHomeTaken
	}
	return path, lock, nil
}

// sweepHomes removes the homes under parent whose process has died: those
// whose lock it can take. Only what is surely a home is touched: a dir of
// the prefix holding a lock file and nothing but run dirs; anything else
// under the temp dir, whatever its name, is someone else's (a dir of our
// prefix without a lock file is one being made, or one whose process died
// in the instant between: it is left). It is best effort: what it cannot
// remove, the next sweep tries.
func sweepHomes(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), homePrefix) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if !onlyRunDirs(path) {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(path, homeLockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if st, err := lock.Stat(); err == nil && st.Mode().IsRegular() &&
			syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(path) // the lock goes with the file's close
		}
		_ = lock.Close()
	}
}

// onlyRunDirs reports whether the dir at path holds its lock file and
// nothing but run dirs: what a home holds.
func onlyRunDirs(path string) bool {
	entries, err := os.ReadDir(path)
	if err != nil {
		return false
	}
	locked := false
	for _, e := range entries {
		switch {
		case e.Name() == homeLockName && e.Type().IsRegular():
			locked = true
		case e.IsDir() && strings.HasPrefix(e.Name(), runDirPrefix):
		default:
			return false
		}
	}
	return locked
}

// close removes the home when it holds nothing but its lock file: the
// dirs kept for later runs have been removed first (Runner.Close). When a
// run is still in flight (a shutdown that did not wait for it), its dir is
// left where it is, and so are the home and its lock, held until the
// process exits: the next Runner's sweep removes them then. Removing the
// lock file first would leave a home without one, which a sweep takes for
// one being made until it is a minute old. A run after close makes a new
// home.
func (h *home) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.path == "" {
		return nil
	}
	entries, err := os.ReadDir(h.path)
	if err != nil {
		return err
	}
	if len(entries) != 1 || entries[0].Name() != homeLockName {
		return nil // a run still in flight: left for the next sweep
	}
	err = os.RemoveAll(h.path)
	_ = h.lock.Close()
	h.path, h.lock = "", nil
	return err
}
