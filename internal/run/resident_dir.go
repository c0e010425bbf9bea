package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// residentDir is the dir where a resident process's runs have their files,
// one run after another: made at its first run, removed when it stops (or
// replaced when something else took its path). Every run has new paths in
// it: each file's name ends in a random part new each run.
//
// The binding contexts are the last run's file renamed to the run's name,
// and written over, when nothing else can reach it: no other open file
// refers to it (soleOpener) and it has no other name; otherwise it is
// removed and a new one made. The output files are not made: the hook
// makes the ones it writes to (a missing one reads as empty, as it always
// did), and the next run removes the last run's. So an output file is
// never any later run's, and whatever writes to a run's file after its
// reply, by its path or name or through a file kept open or a second name
// given to it, writes where no later run reads; and, per run, the operator
// makes no file but the contexts' (on ext4 under load, making and removing
// a dir and five files cost more than the rest of a run, and renaming and
// checking the four empty outputs was a quarter of the operator's CPU in a
// burst: docs/design/running-hooks.md, "Run dirs kept between runs").
type residentDir struct {
	path string
	fd   int // the dir, open: the run's files are made and renamed in it
	// mu orders a run's use of the files and their removal once idle
	// (forget), which inRun and gone tell apart.
	mu     sync.Mutex
	inRun  bool
	gone   bool
	linger *time.Timer // forget, filesLinger after the last run
	// dev and ino are the dir's: its path must still lead to it (uint64:
	// the types of Stat_t's fields differ between systems).
	dev, ino uint64
	// names are the files' names of the last run, in runFiles order; ""
	// until the first run.
	names [len(runFiles)]string
}

// runFiles are the base names of a run's files, the binding contexts
// first; a run's own names add its token (fileName).
var runFiles = [...]string{"binding-context.json", "kubernetes-patch", "metrics", "validating-response", "conversion-response"}

// fileName is the name of run file i in the run whose token is token.
func fileName(i int, token string) string {
	if i == 0 {
		return "binding-context." + token + ".json"
	}
	return runFiles[i] + "." + token
}

// newResidentDir makes a 0700 dir under parent and opens it.
func newResidentDir(parent string) (*residentDir, error) {
	path, err := os.MkdirTemp(parent, runDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the resident process's temp dir: %w", err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("opening the resident process's temp dir: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("opening the resident process's temp dir: %w", err)
	}
	return &residentDir{path: path, fd: fd, dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// intact reports whether d's path still leads to d, as a symlink or a dir
// put in its place would not.
func (d *residentDir) intact() bool {
	var st unix.Stat_t
	return unix.Fstatat(unix.AT_FDCWD, d.path, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		uint64(st.Dev) == d.dev && uint64(st.Ino) == d.ino
}

// prepare gives the run whose token is token its files in d: the binding
// contexts written by contexts, the output files empty. It returns them
// as a runDir (whose remove must not be called: d keeps the files for the
// next run's prepare).
func (d *residentDir) prepare(token string, contexts func(io.Writer) error) (*runDir, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return nil, errDirReplaced
	}
	d.inRun = true
	if !d.intact() {
		return nil, errDirReplaced
	}
	if err := d.prepareContexts(fileName(0, token), contexts); err != nil {
		return nil, fmt.Errorf("preparing the run's files: %w", err)
	}
	d.names[0] = fileName(0, token)
	for i := 1; i < len(runFiles); i++ {
		if old := d.names[i]; old != "" {
			if err := d.removeFile(old); err != nil { // the last run's output: no later run's
				return nil, fmt.Errorf("preparing the run's files: %w", err)
			}
		}
		d.names[i] = fileName(i, token)
	}
	// d.path is clean (MkdirTemp): no need for filepath.Join's work.
	join := func(i int) string { return d.path + string(filepath.Separator) + d.names[i] }
	return &runDir{path: d.path, contexts: join(0), patch: join(1), metrics: join(2), validating: join(3), conversion: join(4)}, nil
}

// errDirReplaced: something took the path of a resident process's dir.
var errDirReplaced = errors.New("the resident process's temp dir was moved or replaced")

// prepareContexts gives the run's binding contexts the name name: the last
// run's file, renamed first (its old path then leads nowhere) and checked
// after, when it may be kept, else a new one.
func (d *residentDir) prepareContexts(name string, contexts func(io.Writer) error) error {
	if old := d.names[0]; old != "" {
		if unix.Renameat(d.fd, old, d.fd, name) == nil {
			if d.keep(name, contexts) {
				return nil
			}
			if err := d.removeFile(name); err != nil {
				return err
			}
		} else if err := d.removeFile(old); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	return errors.Join(contexts(fdWriter(fd)), unix.Close(fd))
}

// keep reports whether the file now named name may serve as the run's
// binding contexts, and writes them over it. Opened without following a
// link and without blocking (a FIFO put in its place), it must be a
// regular 0600 file with no other name, that no other process has open
// (soleOpener).
func (d *residentDir) keep(name string, contexts func(io.Writer) error) bool {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o7777 != 0o600 ||
		st.Nlink != 1 || !soleOpener(fd) {
		return false
	}
	w := &countingFD{fd: fd}
	// Never truncated to zero: contexts are at least "[]", and ext4
	// flushes a file truncated to zero.
	return contexts(w) == nil && (st.Size <= w.n || unix.Ftruncate(fd, w.n) == nil)
}

// removeFile removes what is at name in d, whatever the hook put there.
func (d *residentDir) removeFile(name string) error {
	err := unix.Unlinkat(d.fd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return os.RemoveAll(filepath.Join(d.path, name)) // a dir in its place
}

// done ends a run's use of the files: unless a run follows within
// filesLinger, the binding contexts and what the run wrote (either may
// hold a Secret's data) are removed then (forget), as a one-shot run's
// are at its end.
func (d *residentDir) done() {
	d.mu.Lock()
	d.inRun = false
	d.mu.Unlock()
	if d.linger == nil {
		d.linger = time.AfterFunc(filesLinger, d.forget)
	} else {
		d.linger.Reset(filesLinger)
	}
}

// filesLinger is how long the files of a resident process's last run stay
// while it is idle (done).
const filesLinger = time.Second

// forget removes the contexts and the output files the last run wrote,
// unless a run uses them; the next run makes new contexts.
func (d *residentDir) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inRun || d.gone {
		return
	}
	for i, name := range d.names {
		if name != "" && d.removeFile(name) == nil {
			d.names[i] = ""
		}
	}
}

// remove closes d and removes it with whatever is in it.
func (d *residentDir) remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.linger != nil {
		d.linger.Stop()
	}
	d.gone = true
	_ = unix.Close(d.fd)
	return os.RemoveAll(d.path)
}

// fdWriter writes to a file descriptor.
type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(int(w), p[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// countingFD writes to a file descriptor and counts what it wrote.
type countingFD struct {
	fd int
	n  int64
}

func (c *countingFD) Write(p []byte) (int, error) {
	n, err := fdWriter(c.fd).Write(p)
	c.n += int64(n)
	return n, err
}
