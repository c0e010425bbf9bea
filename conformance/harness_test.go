package conformance_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// A Case is one entry of the corpus: hooks, and the object changes that
// drive them. It is read from cases/<name>/case.yaml.
type Case struct {
	Name string `json:"-"`
	Dir  string `json:"-"`
	// Description says what the case covers.
	Description string `json:"description"`
	// Example names a folder of shell-operator's examples/ in the pinned
	// module; its hooks/ folder is the hooks. Without it, the case's own
	// hooks/ folder is.
	Example string `json:"example"`
	// Hooks lists the hooks (paths under the hooks folder) of an example:
	// the module cache keeps no file modes, so which files are hooks is
	// written here.
	Hooks []string `json:"hooks"`
	// HooksPath is the absolute folder the hooks source their libraries
	// from (an example written for the image uses /hooks/); it is rewritten
	// to the test's hooks folder.
	HooksPath string `json:"hooksPath"`
	// Framework: the hooks source shell-operator's shell framework from
	// /shell_lib.sh, as in its image and ours. The suite lays it out from
	// the pinned module beside the hooks and points the hooks at it.
	Framework bool `json:"framework"`
	// Setup is applied once, before either operator runs, and left in
	// place (CRDs).
	Setup []Step `json:"setup"`
	// Before is applied in the run's namespace before the operator starts
	// (what Synchronization finds).
	Before []Step `json:"before"`
	// Steps are applied in order while the operator runs; after each, the
	// suite waits until no hook has run for a while.
	Steps []Step `json:"steps"`
	// Objects are the resources (as kubectl names them) whose objects in the
	// case's namespace are compared at the end.
	Objects []string `json:"objects"`
	// ClockBound names schedule bindings that fire so seldom (every 15
	// minutes) that whether they fire within a run depends only on the wall
	// clock: their Schedule contexts are left out of the comparison.
	ClockBound []string `json:"clockBound"`
}

// A Step is one change of the cluster. $NS in it is the run's namespace.
type Step struct {
	// Apply is YAML manifests for `kubectl apply`.
	Apply string `json:"apply"`
	// Kubectl is the arguments of one kubectl command (delete, label, ...).
	Kubectl string `json:"kubectl"`
	// Wait lets this much time pass before the suite waits for quiet
	// (schedule bindings).
	Wait string `json:"wait"`
}

// loadCases reads every case under cases/.
func loadCases(t *testing.T) []*Case {
	t.Helper()
	dirs, err := filepath.Glob("cases/*/case.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases under conformance/cases: %v", err)
	}
	var cases []*Case
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := &Case{Name: filepath.Base(filepath.Dir(f)), Dir: filepath.Dir(f)}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Example != "" && len(c.Hooks) == 0 {
			t.Fatalf("%s: example %s: list its hooks under hooks:", f, c.Example)
		}
		cases = append(cases, c)
	}
	return cases
}

// moduleDir returns the pinned shell-operator module's folder in the module
// cache, downloading it if it is not there.
func moduleDir(t *testing.T) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/flant/shell-operator")
	cmd.Dir = filepath.Join(root, "hack", "tools", "shell-operator")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/flant/shell-operator: %v", err)
	}
	var info struct{ Dir string }
	if err := yaml.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download: no folder in %s (%v)", out, err)
	}
	return info.Dir
}

// hooksFolder lays out the case's hooks for one run in a new folder: each
// hook's original under .orig/ (a hidden folder, which neither operator
// searches), and at the hook's own path a wrapper that records each
// binding context it is given in rec, then runs the original.
func hooksFolder(t *testing.T, c *Case, module, rec string) string {
	t.Helper()
	dir := t.TempDir()
	orig := filepath.Join(dir, ".orig")
	src := filepath.Join(c.Dir, "hooks")
	if c.Example != "" {
		src = filepath.Join(module, "examples", c.Example, "hooks")
	}
	must(t, copyTree(src, orig))
	hooks := c.Hooks
	if c.Example == "" {
		hooks = executables(t, orig)
	}
	if c.HooksPath != "" {
		rewriteTree(t, orig, c.HooksPath, orig+"/")
	}
	if c.Framework {
		// The framework as shell-operator's image has it: /shell_lib.sh
		// sources every file of /frameworks/shell/. Both paths move into
		// the hidden .framework/ folder.
		fw := filepath.Join(dir, ".framework")
		must(t, copyTree(filepath.Join(module, "frameworks", "shell"), filepath.Join(fw, "frameworks", "shell")))
		lib, err := os.ReadFile(filepath.Join(module, "shell_lib.sh"))
		must(t, err)
		if !bytes.Contains(lib, []byte("/frameworks/shell/")) {
			t.Fatalf("the pinned module's shell_lib.sh no longer sources /frameworks/shell/; update the suite")
		}
		lib = bytes.ReplaceAll(lib, []byte("/frameworks/shell/"), []byte(fw+"/frameworks/shell/"))
		must(t, os.WriteFile(filepath.Join(fw, "shell_lib.sh"), lib, 0o644))
		rewriteTree(t, orig, "source /shell_lib.sh", "source "+fw+"/shell_lib.sh")
	}
	for _, h := range hooks {
		must(t, os.Chmod(filepath.Join(orig, h), 0o755))
		wrapper := fmt.Sprintf(`#!/usr/bin/env bash
# Written by the conformance suite: records the binding context, marks the
# run as running until it ends, and runs the hook.
if [[ "${1:-}" != "--config" ]]; then
  step=$(cat %[1]q/step)
  cp "$BINDING_CONTEXT_PATH" %[1]q/"$step-$(date +%%s%%N)-"%[2]q.json
  marker=%[1]q/running/$$
  : >"$marker"
  trap 'rm -f "$marker"' EXIT
fi
%[3]q "$@"
`, rec, strings.ReplaceAll(h, "/", "__"), filepath.Join(orig, h))
		path := filepath.Join(dir, h)
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(wrapper), 0o755))
	}
	return dir
}

// executables lists the executable files under dir, as paths relative to it.
func executables(t *testing.T, dir string) []string {
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	must(t, err)
	return out
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, fi.Mode().Perm()|0o600)
	})
}

// rewriteTree replaces from with to in every file under dir.
func rewriteTree(t *testing.T, dir, from, to string) {
	t.Helper()
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, bytes.ReplaceAll(data, []byte(from), []byte(to)), fi.Mode().Perm())
	}))
}

// An operator is one of the two under test.
type operator interface {
	name() string
	// start runs the operator on hooks with env added to its environment
	// (and so to the hooks'); stop ends it. metricsURL serves its hooks'
	// metrics.
	start(t *testing.T, hooks, kubeconfig string, env []string) (stop func(), metricsURL string)
}

type ours struct{ bin string }

func (ours) name() string { return "hook-operator" }

func (o ours) start(t *testing.T, hooks, kubeconfig string, env []string) (func(), string) {
	port := testoperator.FreePort(t)
	return startProcess(t, o.bin, []string{"start", "--hooks-dir", hooks, "--kubeconfig", kubeconfig,
			"--listen-address", "127.0.0.1:" + port, "--health-listen-address", "127.0.0.1:0", "--debug-socket", filepath.Join(t.TempDir(), "debug.sock"),
			"--log-format", "json", "--retry-initial-delay", "200ms", "--retry-max-delay", "1s"}, env),
		"http://127.0.0.1:" + port + "/metrics/hooks"
}

type reference struct{ bin string }

func (reference) name() string { return "shell-operator" }

func (r reference) start(t *testing.T, hooks, kubeconfig string, env []string) (func(), string) {
	port := testoperator.FreePort(t)
	tmp := t.TempDir()
	return startProcess(t, r.bin, []string{"start", "--hooks-dir", hooks, "--kube-config", kubeconfig,
			"--tmp-dir", tmp, "--listen-address", "127.0.0.1", "--listen-port", port,
			"--debug-unix-socket", filepath.Join(tmp, "debug.sock"), "--log-type", "json"}, env),
		"http://127.0.0.1:" + port + "/metrics/hooks"
}

// startProcess starts bin with args; the returned func stops it with
// SIGTERM (SIGKILL after 10 s) and, when t failed, logs its output.
func startProcess(t *testing.T, bin string, args, env []string) func() {
	t.Helper()
	var out testoperator.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), env...)
	must(t, cmd.Start())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("%s %s output:\n%s", filepath.Base(bin), strings.Join(args[:1], " "), testoperator.Tail(out.String(), 60))
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// recorder follows the binding contexts the wrappers write.
type recorder struct {
	dir  string
	step int
}

// The recorder's folder holds the file "step", the folder "running" (a
// file per hook run in progress, named by its wrapper's pid) and the
// recorded binding contexts.
func newRecorder(t *testing.T) *recorder {
	r := &recorder{dir: t.TempDir()}
	must(t, os.Mkdir(filepath.Join(r.dir, "running"), 0o755))
	r.setStep(t, 0)
	return r
}

func (r *recorder) setStep(t *testing.T, n int) {
	r.step = n
	must(t, os.WriteFile(filepath.Join(r.dir, "step"), []byte(fmt.Sprintf("%03d", n)), 0o644))
}

// count returns how many binding contexts are recorded.
func (r *recorder) count() int {
	es, _ := os.ReadDir(r.dir)
	return len(es) - 2 // step and running/
}

// running returns how many hook runs are in progress.
func (r *recorder) running() int {
	es, _ := os.ReadDir(filepath.Join(r.dir, "running"))
	return len(es)
}

// quiet waits until at least min binding contexts are recorded, no hook
// runs, and no context came for the quiet period; or, once min is reached,
// for at most 5 s more until a moment when no hook runs (a schedule that
// fires every second is never quiet). A run in progress holds the wait: a
// slow hook delays the next hook of its queue, whose context belongs to
// this step. It returns false when min was not reached before the
// deadline.
func (r *recorder) quiet(t *testing.T, min int, deadline time.Duration) bool {
	// period: on a loaded machine (CI's cold run, test packages side by
	// side) shell-operator was seen starting a step's run more than 1.2 s
	// after the step's change, so that the run was counted in the next
	// step.
	const period, settleCap = 2500 * time.Millisecond, 6 * time.Second
	end := time.Now().Add(deadline)
	last, since := r.count(), time.Now()
	var reached time.Time
	for time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
		if last >= min && reached.IsZero() {
			reached = time.Now()
		}
		busy := r.running() > 0
		if busy {
			since = time.Now()
		}
		if n := r.count(); n != last {
			last, since = n, time.Now()
		} else if last >= min && !busy && time.Since(since) >= period {
			return true
		}
		if !reached.IsZero() && !busy && time.Since(reached) >= settleCap {
			return true
		}
	}
	return false
}

// runs returns the recorded runs in order: step, hook and the binding
// contexts of each.
func (r *recorder) runs(t *testing.T) []recordedRun {
	es, err := os.ReadDir(r.dir)
	must(t, err)
	var out []recordedRun
	for _, e := range es {
		if e.Name() == "step" || e.Name() == "running" {
			continue
		}
		parts := strings.SplitN(strings.TrimSuffix(e.Name(), ".json"), "-", 3)
		if len(parts) != 3 {
			t.Fatalf("recorded file %s: unexpected name", e.Name())
		}
		data, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		must(t, err)
		var contexts []map[string]any
		if err := yaml.Unmarshal(data, &contexts); err != nil {
			t.Fatalf("recorded binding context %s is not a JSON array: %v\n%s", e.Name(), err, data)
		}
		step, _ := strconv.Atoi(parts[0])
		nanos, _ := strconv.ParseInt(parts[1], 10, 64)
		out = append(out, recordedRun{step: step, at: nanos, hook: strings.ReplaceAll(parts[2], "__", "/"), contexts: contexts})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

type recordedRun struct {
	step     int
	at       int64
	hook     string
	contexts []map[string]any
}

// kubectl runs kubectl against the cluster with stdin.
func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// hookMetrics scrapes url and returns its sample lines, sorted, with the
// operators' own metrics left out (shell-operator serves its hook run
// metrics and its HTTP handler's on /metrics/hooks too).
func hookMetrics(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "shell_operator_") || strings.HasPrefix(line, "hook_operator_") ||
			strings.HasPrefix(line, "promhttp_") {
			continue
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
