package testcluster

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tools remembers, per script, what ToolBinary found: each is run once
// per test binary.
var tools = struct {
	sync.Mutex
	m map[string]*toolResult
}{m: map[string]*toolResult{}}

type toolResult struct {
	once      sync.Once
	path, err string
}

// ToolBinary returns the path a script of hack/tools prints (such as
// "prometheus.sh" or "jaeger.sh"): the tool, built into the per-user cache
// the first time (minutes), found there afterwards. The script runs once
// per test binary; its failure, with its stderr, fails every test asking.
func ToolBinary(t testing.TB, script string) string {
	t.Helper()
	tools.Lock()
	r := tools.m[script]
	if r == nil {
		r = &toolResult{}
		tools.m[script] = r
	}
	tools.Unlock()
	r.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			r.err = err.Error()
			return
		}
		path := filepath.Join(root, "hack", "tools", script)
		out, err := exec.Command(path).Output()
		if err != nil {
			r.err = path + ": " + err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				r.err += "\n" + string(ee.Stderr)
			}
			return
		}
		r.path = strings.TrimSpace(string(out))
	})
	if r.err != "" {
		t.Fatal(r.err)
	}
	return r.path
}
