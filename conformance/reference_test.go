package conformance_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// referenceEnv names the variable that gives the suite another shell-operator
// binary to compare with (one hack/tools/shell-operator-src.sh built, say);
// unset or empty, the reference is the pinned version, built by
// hack/tools/shell-operator.sh, which is what make test runs.
const referenceEnv = "HOOK_OPERATOR_REFERENCE_BIN"

// A referenceInfo is the shell-operator the suite compares with.
type referenceInfo struct {
	bin, version string
	// from says where it came from: the pin or referenceEnv.
	from string
}

// referenceBinary returns the reference (built once per user and version
// when it is the pinned one) and logs which one it is.
func referenceBinary(t *testing.T) (bin, version string) {
	t.Helper()
	ref, err := findReference(os.Getenv(referenceEnv), pinnedReference)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reference: shell-operator %s (%s), %s", ref.version, ref.from, ref.bin)
	return ref.bin, ref.version
}

// findReference returns the binary env names, or else the one pinned
// builds, with the version it reports; the pinned one must report the
// version pinned.
func findReference(env string, pinned func() (bin, version string, err error)) (referenceInfo, error) {
	if env != "" {
		bin, err := filepath.Abs(env)
		if err != nil {
			return referenceInfo{}, fmt.Errorf("%s: %w", referenceEnv, err)
		}
		version, err := reportedVersion(bin)
		if err != nil {
			return referenceInfo{}, fmt.Errorf("%s=%s: %w", referenceEnv, env, err)
		}
		return referenceInfo{bin: bin, version: version, from: referenceEnv}, nil
	}
	bin, want, err := pinned()
	if err != nil {
		return referenceInfo{}, err
	}
	version, err := reportedVersion(bin)
	if err != nil {
		return referenceInfo{}, err
	}
	if version != want {
		return referenceInfo{}, fmt.Errorf("%s reports shell-operator %s, want the pinned %s", bin, version, want)
	}
	return referenceInfo{bin: bin, version: version, from: "pinned by hack/tools/shell-operator/go.mod"}, nil
}

// reportedVersion runs `bin version` and returns the version it names.
func reportedVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s version: %v\n%s", bin, err, out)
	}
	m := regexp.MustCompile(`(?m)^shell-operator (v\S+)$`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s version says %q, not shell-operator vX.Y.Z: is it shell-operator?", bin, out)
	}
	return string(m[1]), nil
}

// pinnedReference builds (once per user and version) the pinned
// shell-operator and returns its path and the pinned version.
func pinnedReference() (bin, version string, err error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", "", err
	}
	mod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "shell-operator", "go.mod"))
	if err != nil {
		return "", "", err
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/flant/shell-operator (v\S+)`).FindSubmatch(mod)
	if m == nil {
		return "", "", errors.New("hack/tools/shell-operator/go.mod pins no github.com/flant/shell-operator")
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools", "shell-operator.sh")).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", "", fmt.Errorf("building the pinned shell-operator: %v\n%s", err, stderr)
	}
	return strings.TrimSpace(string(out)), string(m[1]), nil
}

// The reference is the pinned shell-operator, built from the pin and
// reporting the version pinned, unless HOOK_OPERATOR_REFERENCE_BIN names
// another; either way it is shell-operator and says which version.
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

// HOOK_OPERATOR_REFERENCE_BIN, when set, replaces the pinned reference,
// which is then not built; a binary that is not shell-operator is refused.
func TestReferenceFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, says string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte("#!/bin/sh\necho '"+says+"'\necho 'jqFilter implementation: using itchyny/gojq'\n"), 0o755))
		return p
	}
	pinned := func() (string, string, error) { return fake("pinned", "shell-operator v1.14.0"), "v1.14.0", nil }
	unbuildable := func() (string, string, error) {
		t.Error("the pinned reference was built though the environment names one")
		return "", "", errors.New("not built")
	}

	other := fake("other", "shell-operator v1.20.3")
	ref, err := findReference(other, unbuildable)
	if err != nil || ref.bin != other || ref.version != "v1.20.3" || ref.from != referenceEnv {
		t.Fatalf("%s=%s: got %+v, %v; want it, v1.20.3, from %s", referenceEnv, other, ref, err, referenceEnv)
	}
	ref, err = findReference("", pinned)
	if err != nil || ref.version != "v1.14.0" || ref.from == referenceEnv {
		t.Fatalf("unset: got %+v, %v; want the pinned v1.14.0", ref, err)
	}
	if _, err := findReference(fake("ours", "hook-operator v0.1.0"), unbuildable); err == nil || !strings.Contains(err.Error(), "is it shell-operator?") {
		t.Fatalf("a binary that is not shell-operator: got %v, want it refused", err)
	}
	if _, err := findReference(filepath.Join(dir, "missing"), unbuildable); err == nil {
		t.Fatal("a missing binary: no error")
	}
	wrongPin := func() (string, string, error) { return fake("stale", "shell-operator v1.13.0"), "v1.14.0", nil }
	if _, err := findReference("", wrongPin); err == nil || !strings.Contains(err.Error(), "want the pinned v1.14.0") {
		t.Fatalf("a pinned build reporting another version: got %v", err)
	}
}
