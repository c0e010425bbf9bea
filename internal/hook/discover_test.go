package hook

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// tree creates files under dir: path → mode. Folders are made as needed.
func tree(t *testing.T, dir string, files map[string]os.FileMode) {
	t.Helper()
	for p, mode := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil { // WriteFile's mode is masked by umask
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]os.FileMode{
		"a.sh":                0o755,
		"a-b.sh":              0o700,
		"a/x.sh":              0o755,
		"sub/deeper/c":        0o711,
		"sub/other.py":        0o744, // owner-executable is enough
		"README.md":           0o644,
		"sub/notes.txt":       0o600,
		".hidden.sh":          0o755,
		".git/hooks/pre":      0o755,
		"lib/common.sh":       0o755,
		"sub/lib/helpers.sh":  0o755,
		"lib.sh":              0o755, // only folders named lib are skipped
		"gohook/main.go":      0o644, // a Go hook's source: skipped silently
		"gohook/main_test.go": 0o644,
		"gohook/gohook":       0o755,
		"go.mod":              0o644,
	})
	symlink(t, "missing-target", filepath.Join(dir, "dangling.sh"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "..", filepath.Join(dir, "sub", "loop"))

	names, _, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-b.sh", "a.sh", "a/x.sh", "gohook/gohook", "lib.sh", "sub/deeper/c", "sub/other.py"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("hooks = %q\nwant %q", names, want)
	}
	wantWarnings := []string{
		"README.md: not executable",
		"dangling.sh: broken symlink",
		"fifo: not a regular file",
		"sub/loop: symlink to a folder that contains it",
		"sub/notes.txt: not executable",
	}
	if len(warnings) != len(wantWarnings) {
		t.Fatalf("warnings = %q\nwant %d", warnings, len(wantWarnings))
	}
	joined := strings.Join(warnings, "\n")
	for _, w := range wantWarnings {
		if !strings.Contains(joined, "skipping "+w) {
			t.Errorf("no warning %q in:\n%s", w, joined)
		}
	}
	if !strings.Contains(joined, "chmod +x") {
		t.Errorf("the not-executable warning does not say what to do: %s", joined)
	}
}

// TestDiscoverConfigMapVolume builds the layout the kubelet writes for a
// ConfigMap volume: the real files in a timestamped hidden folder, "..data"
// a symlink to it, and every key (and the top folder of every nested item
// path) a symlink through "..data".
func TestDiscoverConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	stamp := "..2026_01_02_03_04_05.123456789"
	tree(t, dir, map[string]os.FileMode{
		stamp + "/on-pod.sh":        0o755,
		stamp + "/README.md":        0o644,
		stamp + "/nodes/on-node.sh": 0o755,
	})
	symlink(t, stamp, filepath.Join(dir, "..data"))
	symlink(t, "..data/on-pod.sh", filepath.Join(dir, "on-pod.sh"))
	symlink(t, "..data/README.md", filepath.Join(dir, "README.md"))
	symlink(t, "..data/nodes", filepath.Join(dir, "nodes"))

	names, _, warnings, err := Discover(dir, FolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nodes/on-node.sh", "on-pod.sh"}; !reflect.DeepEqual(names, want) {
		t.Errorf("hooks = %q, want %q (each once, under its key's name)", names, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "README.md: not executable") {
		t.Errorf("warnings = %q, want one for README.md", warnings)
	}
}

func TestDiscoverBadDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	tree(t, dir, map[string]os.FileMode{"file": 0o755})
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "does not exist"},
		{file, "is not a folder"},
	} {
		_, _, _, err := Discover(tc.dir, FolderOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.dir) {
			t.Errorf("Discover(%s) error = %v, want one naming the folder and saying %q", tc.dir, err, tc.want)
		}
	}
	names, _, warnings, err := Discover(t.TempDir(), FolderOptions{})
	if err != nil || len(names) != 0 || len(warnings) != 0 {
		t.Errorf("empty folder: %q, %q, %v; want nothing", names, warnings, err)
	}
}
