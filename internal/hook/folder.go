package hook

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// FolderOptions say what may lead out of a hooks folder. The zero value is
// the safe default: only what resolves inside the folder is followed.
type FolderOptions struct {
	// AllowExternalSymlinks follows symlinks (to hooks, to folders, and
	// .hookignore) whose target resolves outside the hooks folder. Off, such
	// a link is skipped with a warning naming it and its target: a link to
	// /usr/bin must not make the operator run every system program with
	// --config. Links that resolve inside the folder, as a ConfigMap
	// volume's keys do through its "..data" folder, are followed either way.
	AllowExternalSymlinks bool
}

// AllowExternalSymlinksFlag is the flag of the CLI commands that sets
// FolderOptions.AllowExternalSymlinks; messages name it.
const AllowExternalSymlinksFlag = "--hooks-allow-external-symlinks"

// MaxIgnoreFileBytes is the most a .hookignore may hold: thousands of
// patterns, where real ones hold a dozen.
const MaxIgnoreFileBytes = 64 << 10

// folder is a hooks folder as Discover and Fingerprint walk it: the path
// as given and the real path that link targets are checked against.
type folder struct {
	dir  string
	real string
	opts FolderOptions
}

func openFolder(dir string, opts FolderOptions) (folder, error) {
	real, err := resolve(dir)
	if err != nil {
		return folder{}, err
	}
	return folder{dir: dir, real: real, opts: opts}, nil
}

// resolve returns the absolute path p leads to, every symlink followed.
func resolve(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real) // of a relative p, EvalSymlinks is relative
}

// external returns, for a symlink at p, its resolved target when that lies
// outside the folder and links out are not allowed; "" otherwise (not a
// symlink, inside, allowed, or broken: the caller's Stat reports that).
func (f folder) external(p string, mode fs.FileMode) string {
	if mode&fs.ModeSymlink == 0 || f.opts.AllowExternalSymlinks {
		return ""
	}
	target, err := resolve(p)
	if err != nil || within(f.real, target) {
		return ""
	}
	return target
}

// within reports whether path is root or under it; both are clean,
// absolute and free of symlinks.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// CheckPath says why h must not run now, or nil: its path resolves
// outside the hooks folder Load found it in, and links out are not
// allowed. Load skipped such links, but one can be repointed after the
// load, and with --hooks-reload=false nothing loads the folder again; so
// whoever starts a hook process checks first, every time. The folder is
// resolved again too, so that a folder swapped as a whole (a ConfigMap
// volume's "..data", git-sync's link) is judged as it is now. A path that
// no longer exists passes: starting it fails with its own error.
//
// What is executed is still the path, resolved again by exec: a link
// swapped in the moment between the check and the exec is not caught.
func (h *Hook) CheckPath() error {
	f := h.folder
	if f.dir == "" || f.opts.AllowExternalSymlinks {
		return nil
	}
	target, err := resolve(h.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return printable(fmt.Errorf("%s: %w", h.Path, err))
	}
	root, err := resolve(f.dir)
	if err != nil {
		return printable(fmt.Errorf("hooks folder %s: %w", f.dir, err))
	}
	if within(root, target) {
		return nil
	}
	return fmt.Errorf("not run: %s now leads to %s, outside the hooks folder %s (a symlink changed since the hook was loaded); %s",
		limit.Printable(h.Path), limit.Printable(target), limit.Printable(root), outsideAdvice())
}

// outsideAdvice is what a message about a link out tells the user to do.
func outsideAdvice() string {
	return "copy what it links to into the hooks folder, or allow links out of the folder with " + AllowExternalSymlinksFlag
}

// readFile reads the file rel (a name in the hooks folder, such as
// .hookignore) for the loader, which must never block nor fill its memory
// on it: the file must be a regular file of at most max bytes, and lie in
// the folder unless links out are allowed. A named pipe would block an
// open until some writer came, and /dev/zero never ends; both are errors
// naming the file and what to make of it. A missing file is an error that
// errors.Is(err, fs.ErrNotExist) reports.
func (f folder) readFile(rel string, max int64) ([]byte, error) {
	p := filepath.Join(f.dir, rel)
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if target := f.external(p, info.Mode()); target != "" {
		return nil, fmt.Errorf("%s is a symlink to %s, outside the hooks folder; %s", rel, limit.Printable(target), outsideAdvice())
	}
	// O_NONBLOCK: opening a named pipe for reading would otherwise wait
	// for a writer, out of reach of the context and of SIGTERM.
	file, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err = file.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file; make it a plain text file of at most %s", rel, fileKind(info.Mode()), limit.Size(max))
	}
	tooBig := fmt.Errorf("%s is larger than %s, the most the operator reads of it; keep it to the patterns the folder needs", rel, limit.Size(max))
	if info.Size() > max {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // it grew since the Stat
		return nil, tooBig
	}
	return b, nil
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	default:
		return fmt.Sprintf("a special file (mode %s)", m)
	}
}

// printableError shows its error with limit.Printable: the paths in an
// error from the file system are file names from the hooks folder, and
// those may hold control characters.
type printableError struct{ err error }

func (e printableError) Error() string { return limit.Printable(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

func printable(err error) error {
	if err == nil {
		return nil
	}
	return printableError{err}
}
