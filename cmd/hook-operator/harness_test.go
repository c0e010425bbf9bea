package main_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The harness: what the integration tests of the binary start from, so
// that each test says only what is its own (its hooks, its flags, what it
// checks). A test takes a harness (the local cluster, a namespace of its
// own, the binary, an empty hooks folder), writes its hooks into it, and
// starts operators on it; each operator is stopped when the test ends and
// its log printed if the test failed.

// A harness is the local cluster, a namespace of the test's own (deleted
// when the test ends), the hook-operator binary built from this tree (once
// per test binary: testoperator.Binary), and an empty hooks folder.
type harness struct {
	c     *testcluster.Cluster
	ns    string
	bin   string
	hooks string
}

// newHarness gets the cluster, a namespace, the binary and a hooks folder.
func newHarness(t *testing.T) *harness {
	t.Helper()
	c := testcluster.Get(t)
	return &harness{c: c, ns: c.Namespace(t), bin: testoperator.Binary(t), hooks: t.TempDir()}
}

// hook writes the executable hook name (a path under the hooks folder)
// with the text script.
func (h *harness) hook(t *testing.T, name, script string) {
	t.Helper()
	writeHook(t, h.hooks, name, script)
}

// configMap creates the ConfigMap name with labels and data in the
// harness's namespace.
func (h *harness) configMap(t *testing.T, name string, labels, data map[string]string) {
	t.Helper()
	createConfigMap(t, h.c, h.ns, name, labels, data)
}

// createConfigMap creates the ConfigMap ns/name with labels and data in
// the cluster c (a test's own cluster, or the harness's).
func createConfigMap(t *testing.T, c *testcluster.Cluster, ns, name string, labels, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
	_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	must(t, err)
}

// apply applies manifest with kubectl, failing t with kubectl's output.
func (h *harness) apply(t *testing.T, manifest string) {
	t.Helper()
	out, err := kubectlApply(h.c.Kubeconfig, manifest)
	must(t, errWith(err, out))
}

// start starts an operator on the harness's hooks folder and the local
// cluster, with the flags extra besides the harness's own.
func (h *harness) start(t *testing.T, extra ...string) *observed {
	t.Helper()
	return startOperator(t, h.hooks, operatorOpts{flags: extra})
}

// startEnv is start with env ("K=V") added to the operator's environment.
func (h *harness) startEnv(t *testing.T, env []string, extra ...string) *observed {
	t.Helper()
	return startOperator(t, h.hooks, operatorOpts{env: env, flags: extra})
}

// operatorOpts say how startOperator runs an operator. The zero value runs
// it on the local cluster with the harness's flags alone.
type operatorOpts struct {
	// kubeconfig is the cluster the operator connects to: the local
	// cluster's when empty. A test on a cluster of its own
	// (testcluster.Owned), behind a proxy or as a ServiceAccount sets it.
	kubeconfig string
	// env is added to the test's environment ("K=V").
	env []string
	// flags come after the harness's own, so they win.
	flags []string
}

// observed is a running `hook-operator start`: its log, the address of its
// HTTP listener, and its debug socket.
type observed struct {
	cmd    *exec.Cmd
	logs   *testoperator.Buffer
	addr   string
	socket string
	bin    string
}

// startOperator starts `hook-operator start` on the hooks folder hooks
// with JSON logs, its HTTP listener and probes on free ports, a debug
// socket of its own and quick retries (tests run operators side by side),
// and waits until the listener is up. The operator gets SIGTERM when the
// test ends, and its log is printed if the test failed.
func startOperator(t *testing.T, hooks string, opts operatorOpts) *observed {
	t.Helper()
	o := &observed{logs: &testoperator.Buffer{}, socket: filepath.Join(t.TempDir(), "debug.sock"), bin: testoperator.Binary(t)}
	o.cmd = operatorCommand(context.Background(), t, hooks, o.socket, opts)
	startLogged(t, o.cmd, o.logs)
	re := regexp.MustCompile(`"address":"([^"]+)"`)
	o.waitFor(t, "the HTTP listener", func() bool {
		m := re.FindStringSubmatch(o.logs.String())
		if m != nil {
			o.addr = m[1]
		}
		return m != nil
	})
	return o
}

// startLogged starts cmd, an operator however started, with its stderr
// in logs. When the test ends it sends SIGTERM, waits for the exit, and
// prints logs if the test failed.
func startLogged(t *testing.T, cmd *exec.Cmd, logs *testoperator.Buffer) {
	t.Helper()
	cmd.Stderr = logs
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
}

// startFails runs an operator as startOperator does and wants it to exit
// with an error within limit: it fails t if the operator exits with 0 or
// is still running at limit. It returns what the operator printed.
func startFails(t *testing.T, hooks string, opts operatorOpts, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := operatorCommand(ctx, t, hooks, filepath.Join(t.TempDir(), "debug.sock"), opts).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("start: %v (still running after %s: %t), want it to fail\n%s", err, limit, ctx.Err() != nil, out)
	}
	return string(out)
}

// operatorCommand is the `hook-operator start` that startOperator and
// startFails run, killed when ctx ends.
func operatorCommand(ctx context.Context, t *testing.T, hooks, socket string, opts operatorOpts) *exec.Cmd {
	t.Helper()
	if opts.kubeconfig == "" {
		opts.kubeconfig = testcluster.Get(t).Kubeconfig
	}
	args := append([]string{"start", "--hooks-dir", hooks, "--kubeconfig", opts.kubeconfig, "--log-format", "json",
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", socket,
		"--retry-initial-delay", "500ms", "--retry-max-delay", "1s"}, opts.flags...)
	cmd := exec.CommandContext(ctx, testoperator.Binary(t), args...)
	cmd.Env = append(os.Environ(), opts.env...)
	return cmd
}

// waitFor waits up to a minute for cond, failing t with the log after.
func (o *observed) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, what, cond, o.logs.String)
}

// waitReady waits until /readyz answers 200.
func (o *observed) waitReady(t *testing.T) {
	t.Helper()
	o.waitFor(t, "ready", func() bool { code, _ := o.get(t, "/readyz"); return code == http.StatusOK })
}

// waitRunning waits until the log says that every binding has started.
func (o *observed) waitRunning(t *testing.T) {
	t.Helper()
	o.waitLog(t, "all bindings started; running")
}

// waitLog waits until the log holds text.
func (o *observed) waitLog(t *testing.T, text string) {
	t.Helper()
	o.waitFor(t, "the log to say "+strconv.Quote(text), func() bool { return strings.Contains(o.logs.String(), text) })
}

// pid is the operator's process id.
func (o *observed) pid() int { return o.cmd.Process.Pid }

// stop sends SIGTERM and returns how the operator exited; it kills the
// operator and fails t if it has not exited within 40s.
func (o *observed) stop(t *testing.T) error {
	t.Helper()
	must(t, o.cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- o.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(40 * time.Second):
		_ = o.cmd.Process.Kill()
		<-exited
		t.Fatalf("the operator did not exit within 40s of SIGTERM")
		return nil
	}
}

// kill kills the operator at once (no shutdown of its own) and waits for
// it to be gone.
func (o *observed) kill(t *testing.T) {
	t.Helper()
	must(t, o.cmd.Process.Kill())
	_ = o.cmd.Wait()
}

// get fetches path from the operator's HTTP listener; the code is 0 (and
// the body the error) when the request failed.
func (o *observed) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return fetch(http.DefaultClient, "http://"+o.addr+path, "")
}

// fetch GETs url with client, with token as a bearer token unless it is
// empty, and returns the status and body (0 and the error when there is
// no answer).
func fetch(client *http.Client, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return send(client, req)
}

// send sends req with client and returns the status and body (0 and the
// error when there is no answer).
func send(client *http.Client, req *http.Request) (int, string) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metric returns the value of the sample line that starts with series
// (name{labels} as Prometheus prints it, labels sorted), or -1.
func (o *observed) metric(t *testing.T, series string) float64 {
	t.Helper()
	_, body := o.get(t, "/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series+" ") {
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, series+" "), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// wantMetric fails t, going on, unless the sample series (as metric reads
// it) is want.
func (o *observed) wantMetric(t *testing.T, series string, want float64) {
	t.Helper()
	if got := o.metric(t, series); got != want {
		t.Errorf("%s = %v, want %v", series, got, want)
	}
}

// debug runs `hook-operator debug` on the operator's socket with args and
// returns its output, failing t if it fails.
func (o *observed) debug(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(o.bin, append([]string{"debug", "--socket", o.socket}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("debug %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// writeHook writes the executable file dir/name with the text script.
func writeHook(t *testing.T, dir, name, script string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
}

// bashHook is the text of a bash hook that prints config (JSON with no
// single quote) for --config and runs body otherwise.
func bashHook(config, body string) string {
	return "#!/usr/bin/env bash\nif [[ \"${1:-}\" == \"--config\" ]]; then\n  echo '" + config + "'\n  exit 0\nfi\n" + body
}

// yamlHook is the text of a bash hook that prints config (YAML, in which
// the shell expands $ as in any unquoted here-document) for --config and
// runs body otherwise, with set -euo pipefail.
func yamlHook(config, body string) string {
	return "#!/usr/bin/env bash\nset -euo pipefail\nif [[ \"${1:-}\" == \"--config\" ]]; then\ncat <<EOF\n" + config + "\nEOF\nexit 0\nfi\n" + body
}

// wantAll fails t, going on, for each of wants that out lacks: what (the
// log, an error) lacks it, with out.
func wantAll(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitUntil waits up to a minute for cond, failing t with what and logs()
// after.
func waitUntil(t *testing.T, what string, cond func() bool, logs func() string) {
	t.Helper()
	poll.Every(t, 50*time.Millisecond, time.Minute, what, cond, logs)
}
