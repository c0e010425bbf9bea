package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// No build output is tracked: a test binary (go test -c) and the bench's
// binary were once committed by mistake, 50 MB in the history of every
// clone. An executable the project needs is built by make.
func TestNoExecutableBinaryTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z", "--full-name", ":/").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(top))
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join(root, path))
		if err != nil {
			continue // deleted in the work tree
		}
		magic := make([]byte, 4)
		n, _ := f.Read(magic)
		_ = f.Close()
		if n == 4 && (string(magic) == "\x7fELF" || string(magic[:2]) == "MZ" ||
			string(magic) == "\xcf\xfa\xed\xfe" || string(magic) == "\xca\xfe\xba\xbe") {
			t.Errorf("%s is an executable binary tracked by git: build it with make instead, and add it to .gitignore", path)
		}
	}
}
