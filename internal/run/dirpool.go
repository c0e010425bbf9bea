package run

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// maxFreeDirs bounds the run dirs a Runner keeps between runs; more are
// kept only while that many runs go on at once.
const maxFreeDirs = 8

// dirPool holds run dirs between runs (Runner.ReuseDirs). Creating a dir
// and its five files and removing them again is, on ext4, about a quarter
// of what a run costs the operator (the journal); emptying the files of a
// dir kept from an earlier run costs a few reads of metadata.
type dirPool struct {
	mu     sync.Mutex
	free   []*runDir
	closed bool
}

func (p *dirPool) get() *runDir {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		d := p.free[n-1]
		p.free = p.free[:n-1]
		return d
	}
	return nil
}

// put keeps d for a later run and reports whether it did.
func (p *dirPool) put(d *runDir) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.free) >= maxFreeDirs {
		return false
	}
	p.free = append(p.free, d)
	return true
}

// close removes the kept dirs; later runs remove theirs as they end.
func (p *dirPool) close() error {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	for _, d := range free {
		errs = append(errs, d.remove())
	}
	return errors.Join(errs...)
}

// takeDir returns a run dir holding contexts: one kept from an earlier
// run when there is one, else a new one.
func (r *Runner) takeDir(contexts func(io.Writer) error) (*runDir, error) {
	if r.ReuseDirs {
		if d := r.pool.get(); d != nil {
			if err := d.writeContexts(contexts); err == nil {
				return d, nil
			}
			_ = os.RemoveAll(d.path)
		}
	}
	parent, err := r.home.dir(r.TmpDir)
	if err != nil {
		return nil, err
	}
	return newRunDir(parent, contexts)
}

// releaseDir ends d's use by a run. It keeps d for a later run when no
// process that may be the run's is left (reusable) and d can be reset to
// what a new dir is, and removes it otherwise: a leftover that holds one of
// d's files open, or would open one by its name, reaches nothing of a
// later run.
func (r *Runner) releaseDir(d *runDir, reusable bool) error {
	if r.ReuseDirs && reusable && d.reset() && r.pool.put(d) {
		return nil
	}
	return d.remove()
}

// Close stops the resident hook processes (each as docs/running.md says:
// fd 3 closed, SIGTERM after 5 s, SIGKILL after the kill grace; a process
// busy with a run is stopped when its run returns it) and waits for them,
// then removes the run dirs kept for later runs (ReuseDirs) and the
// Runner's own dir under TmpDir (home.go). Runs that end after it remove
// their dirs; resident runs after it fail.
func (r *Runner) Close() error {
	r.residents.close(r.killGrace())
	return errors.Join(r.pool.close(), r.home.close())
}

// reset empties d for a later run and reports whether d is now as
// newRunDir leaves a dir, but for the binding contexts, which it removes
// (the next run writes its own). It is not when the hook added,
// removed or replaced an entry of the dir, or changed a file's mode: a
// later run must see nothing of this one.
func (d *runDir) reset() bool {
	f, err := os.Open(d.path)
	if err != nil {
		return false
	}
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil || len(names) != 5 {
		return false
	}
	slices.Sort(names)
	for i, p := range []string{d.contexts, d.conversion, d.patch, d.metrics, d.validating} { // sorted by base name
		if names[i] != filepath.Base(p) {
			return false
		}
		if p == d.contexts {
			continue
		}
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			return false
		}
		// Recreated rather than truncated: ext4 flushes a file truncated
		// to zero (auto_da_alloc), which costs more than a new file.
		if st.Size() > 0 && (os.Remove(p) != nil || createFile(p, nil) != nil) {
			return false
		}
	}
	return os.Remove(d.contexts) == nil
}
