// Package hack_test checks the project's scripts for the mistakes that pass
// on a warm machine and fail on a fresh one.
package hack_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// earlyReader is a pipeline stage that may exit before it has read all its
// input: grep -q or -m, head, read, and sed or awk told to quit. Under
// `set -o pipefail` the writer then dies of SIGPIPE and the whole pipeline
// fails, though the reader found what it wanted: the pipeline's status
// depends on how fast the writer is. Read the output into a variable and
// match that instead.
var earlyReader = regexp.MustCompile(`\|\s*(grep\s+(-[a-zA-Z]*[qm]|--quiet|--silent|--max-count)|head\b|read\b|sed\s+(-n\s+)?'?[0-9]*q|awk\b[^|]*\bexit\b)`)

// Every file the project tracks that sets pipefail (scripts, the Makefile,
// bash embedded in Go tests) has no pipeline whose status depends on
// timing. Such a pipeline broke the first build of the pinned
// shell-operator on a fresh machine (its version check: `version | grep -qF`).
func TestNoEarlyExitingReaderUnderPipefail(t *testing.T) {
	root, files := trackedFiles(t)
	checked := 0
	for _, path := range files {
		// This file names the patterns it looks for.
		if strings.HasSuffix(path, ".md") || strings.HasPrefix(path, "bench/results/") || path == "hack/pipefail_test.go" {
			continue
		}
		// A tracked symlink (examples/tutorial/lib) leads to files checked
		// under their own paths.
		if fi, err := os.Lstat(filepath.Join(root, path)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 || !bytes.Contains(data, []byte("pipefail")) {
			continue
		}
		checked++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
				continue
			}
			if m := earlyReader.FindString(line); m != "" {
				t.Errorf("%s:%d: %q under pipefail: the reader may exit before the writer is done, and the pipeline then fails; read the output into a variable and match that: %s",
					path, n, m, line)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files set pipefail; is git ls-files listing the repository?", checked)
	}
}

// The pattern finds what it is for, and leaves alone what reads all its input.
func TestEarlyReaderPattern(t *testing.T) {
	for line, want := range map[string]bool{
		`"$tmp/x" version 2>&1 | grep -qF "$version" || {`: true,
		`kubectl get pods | grep -m1 Running`:              true,
		`ls | head -1`:                                     true,
		`cmd | read -r first`:                              true,
		`cmd | sed -n 1q`:                                  true,
		`cmd | awk '{ print; exit }'`:                      true,
		`/out/kubectl version --client | grep -F "$V"`:     false,
		`grep -qF "$v" file`:                               false,
		`cmd | cut -f2- | sed 's/^/  /'`:                   false,
		`while read -r line; do`:                           false,
	} {
		if got := earlyReader.MatchString(line); got != want {
			t.Errorf("%s: matched %v, want %v", line, got, want)
		}
	}
}
