package hook

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Discover finds the hooks under dir: every executable regular file, found
// recursively and returned as paths relative to dir with forward slashes
// ("pods/on-create.sh"), sorted. Names starting with "." (files and
// folders), folders named "lib", and the source files of Go hooks (*.go,
// go.mod, go.sum) are skipped silently; other files that are not
// executable, broken symlinks and special files are skipped with a warning
// each.
//
// Symlinks are followed, to files and to folders: a Kubernetes ConfigMap
// volume presents each key as a symlink into its hidden "..data" folder
// (itself skipped as a dot-folder), and nested items as symlinked folders.
// A hook keeps the name it has under dir, not the name of its target.
//
// Entries that the hooks folder's .hookignore file matches (see
// IgnoreFile) are left out, and an ignored folder is not read at all;
// ignored lists them with the line that matched.
//
// A dir that is missing or not a folder, a folder that cannot be read, and
// a .hookignore line that is not a valid pattern, are errors.
func Discover(dir string) (names []string, ignored []Skipped, warnings []string, err error) {
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
	rules, err := readIgnore(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	d := discovery{root: dir, rules: rules}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hooks folder %q: %w", dir, err)
	}
	if err := d.walk("", map[string]bool{real: true}); err != nil {
		return nil, nil, nil, err
	}
	sort.Strings(d.names)
	return d.names, d.ignored, d.warnings, nil
}

type discovery struct {
	root     string
	rules    ignoreRules
	names    []string
	ignored  []Skipped
	warnings []string
}

// walk visits the folder rel (relative to the root, "" for the root).
// ancestors holds the real paths of the folders on the way down, so that a
// symlink pointing back up does not recurse forever.
func (d *discovery) walk(rel string, ancestors map[string]bool) error {
	full := filepath.Join(d.root, filepath.FromSlash(rel))
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
			return fmt.Errorf("hooks folder %q: %w", d.root, err)
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
		switch {
		case info.IsDir():
			if name == "lib" {
				continue
			}
			real, err := filepath.EvalSymlinks(fullName)
			if err != nil {
				return fmt.Errorf("hooks folder %q: %w", d.root, err)
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
		case goSource(name):
			// The source of a Go hook, next to the executable built from it.
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

func (d *discovery) warnf(format string, args ...any) {
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

// goSource reports whether a file name is Go source or module metadata.
func goSource(name string) bool {
	return strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum"
}
