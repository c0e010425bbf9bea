// Package testoperator runs the hook-operator binary with the shipped
// hooks against the local cluster, for the hooks' end-to-end tests: it
// builds the binary and the Go hooks, installs the shipped CRDs, starts
// the operator, and counts the hook runs it logs.
package testoperator

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary builds hook-operator once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binary, buildErr = Build("./cmd/hook-operator", "hook-operator") })
	if buildErr != nil {
		t.Fatalf("testoperator: %v", buildErr)
	}
	return binary
}

// Build builds the Go package pkg (a path relative to the repository root)
// into the user's cache as name and returns its path. There is one such
// folder per repository checkout, and each build replaces the last: a temp
// dir per test binary would leave a copy behind after every package's
// tests. Packages' tests run in parallel and may build the same program:
// each writes its own file and renames it into place, so nobody runs a
// half-written file.
func Build(pkg, name string) (string, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache dir for the test binaries: %w", err)
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(cache, "hook-operator", "testbin", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	cmd := gobuild.Command(root, "-o", tmp.Name(), pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	path := filepath.Join(dir, name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// Hooks copies the named folders of the repository's hooks/ (all of them
// when none is named), and hooks/lib, into a temp hooks folder, builds the
// Go hooks in it (each Go package folder <d> gets the executable <d>/<d>),
// and returns the folder.
func Hooks(t testing.TB, names ...string) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "hooks")
	if len(names) == 0 {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "lib" {
				names = append(names, e.Name())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(src, "lib")); err == nil {
		names = append(names, "lib")
	}
	dst := t.TempDir()
	for _, n := range names {
		if err := copyTree(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
			t.Fatalf("testoperator: copy hooks/%s: %v", n, err)
		}
		if err := buildGoHook(root, n, dst); err != nil {
			t.Fatalf("testoperator: %v", err)
		}
	}
	return dst
}

// buildGoHook builds hooks/<name> into dst/<name>/<name> when it is a Go
// package.
func buildGoHook(root, name, dst string) error {
	matches, _ := filepath.Glob(filepath.Join(root, "hooks", name, "*.go"))
	var sources []string
	for _, m := range matches {
		if !strings.HasSuffix(m, "_test.go") {
			sources = append(sources, m)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	cmd := gobuild.Command(root, "-o", filepath.Join(dst, name, name), "./hooks/"+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./hooks/%s: %v\n%s", name, err, out)
	}
	return nil
}

// copyTree copies the regular files under src (keeping their modes) and
// its folders; Go test files are left out.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(target, 0o755)
		case strings.HasSuffix(path, "_test.go"), !info.Mode().IsRegular():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

// Operator is a running `hook-operator start`.
type Operator struct {
	cmd  *exec.Cmd
	done chan struct{}

	mu       sync.Mutex
	logs     strings.Builder
	runs     map[string]int
	failures map[string]int
	lastRun  time.Time
}

// Start runs `hook-operator start --hooks-dir hooksDir` against c with
// JSON logs and the extra environment variables env ("K=V"), and stops it
// when the test ends. Failed runs are retried quickly, so tests of failure
// and recovery do not wait long.
func Start(t testing.TB, c *testcluster.Cluster, hooksDir string, env ...string) *Operator {
	t.Helper()
	// A free port and a socket of its own: tests run operators side by side.
	cmd := exec.Command(Binary(t), "start", "--hooks-dir", hooksDir, "--kubeconfig", c.Kubeconfig,
		"--log-format", "json", "--retry-initial-delay", "200ms", "--retry-max-delay", "2s", "--shutdown-grace-period", "5s",
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", filepath.Join(t.TempDir(), "debug.sock"))
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	o := &Operator{cmd: cmd, done: make(chan struct{}), runs: map[string]int{}, failures: map[string]int{}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(o.done)
		o.read(stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		o.Stop(t)
		// The shipped hooks declare their writes; what the runtime finds
		// outside them would be refused with --restrict-writes.
		for _, line := range strings.Split(o.Logs(), "\n") {
			if strings.Contains(line, "an operation writes outside the hook's declared writes") {
				t.Errorf("testoperator: a hook wrote outside its declared writes (add the access to its writes): %s", line)
				break
			}
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", Tail(o.Logs(), 200))
		}
	})
	return o
}

// read consumes the operator's JSON log lines.
func (o *Operator) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		var rec struct {
			Msg  string `json:"msg"`
			Hook string `json:"hook"`
		}
		_ = json.Unmarshal([]byte(line), &rec)
		o.mu.Lock()
		o.logs.WriteString(line + "\n")
		switch {
		case rec.Msg == "hook run succeeded":
			o.runs[rec.Hook]++
			o.lastRun = time.Now()
		case strings.HasPrefix(rec.Msg, "hook failed"):
			o.failures[rec.Hook]++
			o.lastRun = time.Now()
		}
		o.mu.Unlock()
	}
}

// Runs returns how many runs of hook (its path under the hooks folder)
// have succeeded so far.
func (o *Operator) Runs(hook string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs[hook]
}

// Failures returns how many runs of hook have failed so far.
func (o *Operator) Failures(hook string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failures[hook]
}

// Logs returns the operator's log so far.
func (o *Operator) Logs() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logs.String()
}

// WaitQuiet waits until no run has finished for quiet, failing t after max.
func (o *Operator) WaitQuiet(t testing.TB, quiet, max time.Duration) {
	t.Helper()
	deadline := time.Now().Add(max)
	for {
		o.mu.Lock()
		last := o.lastRun
		o.mu.Unlock()
		if time.Since(last) >= quiet {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testoperator: hooks still running after %s (a hot loop?); runs: %v", max, o.counts())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (o *Operator) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, v := range o.runs {
		out[k] = v
	}
	return out
}

// Stop sends SIGTERM and waits for the operator to exit (killing it after
// 30s). Stopping twice is fine.
func (o *Operator) Stop(t testing.TB) {
	t.Helper()
	if o.cmd.Process == nil {
		return
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(30 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
		t.Errorf("testoperator: the operator did not stop within 30s of SIGTERM")
	}
}

// Eventually polls cond every 200ms until it returns true, failing t with
// what and cond's last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("condition not met")
			}
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// InstallCRDs applies the CRDs in the repository's deploy/crds/ named by
// files (InstallCRD).
func InstallCRDs(t testing.TB, c *testcluster.Cluster, files ...string) {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		InstallCRD(t, c, filepath.Join(root, "deploy", "crds", f))
	}
}

// InstallCRD applies the CRD in the file path (server-side apply, so a
// changed CRD is updated) and waits until its kind is served. A CRD has a
// fixed name and is shared by every test, so it is never deleted.
func InstallCRD(t testing.TB, c *testcluster.Cluster, path string) {
	t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "apply", "--server-side", "--force-conflicts",
		"--field-manager", "hook-operator-tests", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("testoperator: apply %s: %v\n%s", path, err, out)
	}
	out, err = exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "wait", "--for", "condition=Established",
		"--timeout", "60s", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("testoperator: %s not established: %v\n%s", path, err, out)
	}
	waitServed(t, c, path)
}

// waitServed waits until the kind of the CRD in path can be listed:
// Established can precede serving by a moment.
func waitServed(t testing.TB, c *testcluster.Cluster, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group    string                  `json:"group"`
			Names    struct{ Plural string } `json:"names"`
			Versions []struct{ Name string } `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil || len(crd.Spec.Versions) == 0 {
		t.Fatalf("testoperator: %s is not a CRD: %v", path, err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	Eventually(t, 30*time.Second, gvr.String()+" served", func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
}
