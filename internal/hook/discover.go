package hook

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Discover finds the hooks under dir: every executable regular file, found
// recursively and returned as paths relative to dir with forward slashes
// ("pods/on-create.sh"), sorted. Names starting with "." (files and
// folders), folders named "lib", and the source files of Go hooks (*.go,
// go.mod, go.sum) are skipped silently; other files that are not
// executable, broken symlinks and special files are skipped with a warning
// each.
//
// Symlinks are followed, to files and to folders, when their target lies
// inside dir: a Kubernetes ConfigMap volume presents each key as a symlink
// into its hidden "..data" folder (itself skipped as a dot-folder), and
// nested items as symlinked folders. A hook keeps the name it has under
// dir, not the name of its target. A symlink whose target lies outside dir
// is skipped with a warning naming it and its target, unless
// opts.AllowExternalSymlinks.
//
// Entries that the hooks folder's .hookignore file matches (see
// IgnoreFile) are left out, and an ignored folder is not read at all;
// ignored lists them with the line that matched.
//
// A dir that is missing or not a folder, a folder that cannot be read, a
// .hookignore that is not a regular file of at most MaxIgnoreFileBytes
// (or is a link out of dir), and a .hookignore line that is not a valid
// pattern, are errors. Names in warnings and errors are shown with
// limit.Printable; the names returned are the files' own.
func Discover(dir string, opts FolderOptions) (names []string, ignored []Skipped, warnings []string, err error) {
	names, ignored, warnings, err = discover(dir, opts)
	return names, ignored, warnings, printable(err)
}

func discover(dir string, opts FolderOptions) (names []string, ignored []Skipped, warnings []string, err error) {
	info, err := os.Stat(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, nil, fmt.Errorf("hooks folder %q does not exist", dir)
		}
		return nil, nil, nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, nil, nil, fmt.Errorf("hooks folder %q is not a folder", dir)
	}
	f, err := openFolder(dir, opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	rules, err := readIgnore(f)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	d := discovery{folder: f, rules: rules}
	if err := d.walk("", map[string]bool{f.real: true}); err != nil {
		return nil, nil, nil, err
	}
	sort.Strings(d.names)
	return d.names, d.ignored, d.warnings, nil
}

type discovery struct {
	folder
	rules    ignoreRules
	names    []string
	ignored  []Skipped
	warnings []string
}

// walk visits the folder rel (relative to the root, "" for the root).
// ancestors holds the real paths of the folders on the way down, so that a
// symlink pointing back up does not recurse forever.
func (d *discovery) walk(rel string, ancestors map[string]bool) error {
	full := filepath.Join(d.dir, filepath.FromSlash(rel))
	entries, err := os.ReadDir(full)
	if err != nil {
		return fmt.Errorf("hooks folder %q: %w", full, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		relName := path.Join(rel, name)
		fullName := filepath.Join(full, name)
		// os.Stat follows symlinks, so a link is judged by its target.
		info, err := os.Stat(fullName)
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 && os.IsNotExist(err) {
				d.warnf("skipping %s: broken symlink; fix or remove it", relName)
				continue
			}
			return fmt.Errorf("hooks folder %q: %w", d.dir, err)
		}
		if ignored, rule := d.rules.match(relName, info.IsDir()); ignored {
			shown := relName
			if info.IsDir() {
				shown += "/"
			}
			d.ignored = append(d.ignored, Skipped{Name: shown,
				Reason: fmt.Sprintf("%s by %s line %d (%s)", ReasonIgnored, IgnoreFile, rule.line, rule.text)})
			continue
		}
		if info.IsDir() && name == "lib" || !info.IsDir() && goSource(name) {
			// Helpers the hooks use, and the source of a Go hook next to
			// the executable built from it: not hooks, wherever they are.
			continue
		}
		if target := d.external(fullName, e.Type()); target != "" {
			d.warnf("skipping %s: symlink to %s, outside the hooks folder; %s", relName, target, outsideAdvice())
			continue
		}
		switch {
		case info.IsDir():
			real, err := resolve(fullName)
			if err != nil {
				return fmt.Errorf("hooks folder %q: %w", d.dir, err)
			}
			if ancestors[real] {
				d.warnf("skipping %s: symlink to a folder that contains it (a loop)", relName)
				continue
			}
			ancestors[real] = true
			err = d.walk(relName, ancestors)
			delete(ancestors, real)
			if err != nil {
				return err
			}
		case !info.Mode().IsRegular():
			d.warnf("skipping %s: not a regular file (mode %s)", relName, info.Mode())
		case info.Mode().Perm()&0o111 == 0:
			d.warnf("skipping %s: not executable (mode %s); run chmod +x on it if it is a hook, or move it into a lib folder or a dot-file if it is not",
				relName, info.Mode().Perm())
		default:
			d.names = append(d.names, relName)
		}
	}
	return nil
}

// warnf adds a warning; its names come from the folder's file names.
func (d *discovery) warnf(format string, args ...any) {
	d.warnings = append(d.warnings, limit.Printable(fmt.Sprintf(format, args...)))
}

// goSource reports whether a file name is Go source or module metadata.
func goSource(name string) bool {
	return strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum"
}
