package record

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// output is where the recording goes: stdout, or a file replaced at once
// when the recording is complete, so that a reader never sees half a file
// and a failed recording leaves the old file.
type output struct {
	path string
	tmp  *os.File // nil for stdout
	w    io.Writer
	done bool
}

// createOutput prepares path ("-" for stdout). It creates the temporary
// file at once, so that a folder that cannot be written fails before the
// recording starts rather than after.
func createOutput(path string, stdout io.Writer) (*output, error) {
	if path == "-" {
		return &output{path: path, w: stdout}, nil
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("--out %s is a folder: name the file to write", path)
	}
	// CreateTemp makes the file with mode 0600: recordings may hold
	// cluster data.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
	return &output{path: path, tmp: tmp, w: tmp}, nil
}

// commit puts the written file in place.
func (o *output) commit() error {
	if o.tmp == nil {
		return nil
	}
	if err := o.tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("--out %s: %w", o.path, err)
	}
	if err := o.tmp.Sync(); err != nil {
		return fmt.Errorf("--out %s: %w", o.path, err)
	}
	if err := o.tmp.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", o.path, err)
	}
	if err := os.Rename(o.tmp.Name(), o.path); err != nil {
		return fmt.Errorf("--out %s: %w", o.path, err)
	}
	o.done = true
	return nil
}

// discard removes the temporary file unless it was committed.
func (o *output) discard() {
	if o.tmp == nil || o.done {
		return
	}
	_ = o.tmp.Close()
	_ = os.Remove(o.tmp.Name())
}
