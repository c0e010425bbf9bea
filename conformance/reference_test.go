package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// referenceBinary builds (once per user and version) the pinned shell-operator
// and returns its path and the pinned version.
func referenceBinary(t *testing.T) (bin, version string) {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "shell-operator", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/flant/shell-operator (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("hack/tools/shell-operator/go.mod pins no github.com/flant/shell-operator")
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools", "shell-operator.sh")).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("building the pinned shell-operator: %v\n%s", err, stderr)
	}
	return strings.TrimSpace(string(out)), string(m[1])
}

// The reference builds from the pin and is the version pinned.
func TestReferenceIsThePinnedShellOperator(t *testing.T) {
	bin, version := referenceBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), "shell-operator "+version) {
		t.Fatalf("%s version says %q, want shell-operator %s", bin, out, version)
	}
}
