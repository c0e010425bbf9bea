package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// mirrorHook keeps a ConfigMap m-NAME (label role=mirror) with the data of
// every ConfigMap NAME labelled role=source in the namespace, and deletes
// mirrors whose source is gone. It is level-triggered: each run compares
// the two snapshots and writes only the differences.
//
// Mirrors have no dependents, so it deletes them in the background: a
// (foreground) Delete waits for the garbage collector, which after a
// control-plane restart works only once kube-controller-manager holds its
// leader lease again (about 15 s later), whatever the operator does.
const mirrorHook = `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'YAML'
configVersion: v1
kubernetes:
- name: sources
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector: {matchLabels: {role: source}}
  jqFilter: '{name: .metadata.name, data: .data}'
  group: mirror
- name: mirrors
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [NAMESPACE]}}
  labelSelector: {matchLabels: {role: mirror}}
  jqFilter: '{name: .metadata.name, data: .data}'
  group: mirror
YAML
  exit 0
fi
jq -c --arg ns NAMESPACE '
  .[-1].snapshots as $s
  | ([$s.sources[].filterResult | {key: ("m-" + .name), value: .data}] | from_entries) as $want
  | ([$s.mirrors[].filterResult | {key: .name, value: .data}] | from_entries) as $have
  | ($want | to_entries[] | select($have[.key] != .value)
      | {operation: "CreateOrUpdate", object: {apiVersion: "v1", kind: "ConfigMap",
          metadata: {name: .key, namespace: $ns, labels: {role: "mirror"}}, data: .value}}),
    ($have | keys[] | select($want[.] == null)
      | {operation: "DeleteInBackground", apiVersion: "v1", kind: "ConfigMap", namespace: $ns, name: .})
' "$BINDING_CONTEXT_PATH" > "$KUBERNETES_PATCH_PATH"
`

// operator is a running hook-operator binary.
type operator struct {
	cmd  *exec.Cmd
	logs *testoperator.Buffer
	addr string
	done chan struct{}
}

// startOperator runs `hook-operator start` on hooksDir against kubeconfig
// with the default retry settings, and stops it when t ends.
func startOperator(t *testing.T, kubeconfig, hooksDir string, extra ...string) *operator {
	t.Helper()
	args := append([]string{"start", "--hooks-dir", hooksDir, "--kubeconfig", kubeconfig, "--log-format", "json",
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0", "--debug-socket", filepath.Join(t.TempDir(), "debug.sock")}, extra...)
	bin := os.Getenv("FAULTS_BINARY") // another build to measure, e.g. an older one
	if bin == "" {
		bin = testoperator.Binary(t)
	}
	o := &operator{cmd: exec.Command(bin, args...), logs: &testoperator.Buffer{}, done: make(chan struct{})}
	o.cmd.Stderr = o.logs
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = o.cmd.Wait(); close(o.done) }()
	t.Cleanup(func() {
		o.kill(syscall.SIGTERM)
		if dir := os.Getenv("FAULTS_LOG_DIR"); dir != "" {
			name := fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), o.cmd.Process.Pid)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(o.logs.String()), 0o600); err != nil {
				t.Errorf("keeping the operator log: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("operator log (last lines):\n%s", testoperator.Tail(o.logs.String(), 80))
		}
	})
	re := regexp.MustCompile(`"address":"([^"]+)"`)
	eventually(t, 20*time.Second, "the operator's HTTP listener", func() bool {
		m := re.FindStringSubmatch(o.logs.String())
		if m != nil {
			o.addr = m[1]
		}
		return m != nil
	})
	return o
}

// kill sends sig and waits for the process to end.
func (o *operator) kill(sig syscall.Signal) {
	_ = o.cmd.Process.Signal(sig)
	select {
	case <-o.done:
	case <-time.After(20 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}

// waitRunning waits until the log says that every binding has started.
func (o *operator) waitRunning(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "start-up", func() bool { return strings.Contains(o.logs.String(), "all bindings started") })
}

// ready returns the status of the operator's /readyz.
func (o *operator) ready() int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + o.addr + "/readyz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// metric returns the sum of the samples of a metric whose series start
// with prefix.
func (o *operator) metric(t *testing.T, prefix string) float64 {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + o.addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Every(t, 50*time.Millisecond, timeout, what, cond, nil)
}

// mirrorEnv is a namespace with sources and the mirror hook.
type mirrorEnv struct {
	t        *testing.T
	c        *testcluster.Cluster
	ns       string
	hooksDir string
	rng      *rand.Rand
	// alive are the names of the sources not deleted yet; gen counts
	// updates, so that every update writes new data.
	alive []string
	gen   int
}

func newMirrorEnv(t *testing.T, c *testcluster.Cluster, sources int) *mirrorEnv {
	t.Helper()
	e := &mirrorEnv{t: t, c: c, ns: c.Namespace(t), hooksDir: t.TempDir(), rng: rand.New(rand.NewPCG(1, 2))}
	script := strings.ReplaceAll(mirrorHook, "NAMESPACE", e.ns)
	if err := os.WriteFile(filepath.Join(e.hooksDir, "mirror.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	names := make([]string, sources)
	for i := range names {
		names[i] = fmt.Sprintf("s-%04d", i)
	}
	e.parallel(names, func(ctx context.Context, name string) error {
		_, err := c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, source(name, "v0"), metav1.CreateOptions{})
		return err
	})
	e.alive = names
	return e
}

func source(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": "source"}},
		Data:       map[string]string{"value": value},
	}
}

// parallel calls f for every name with 8 workers, retrying each call until
// it succeeds (the API server may be away for a while): a write the test
// meant to make is never dropped.
func (e *mirrorEnv) parallel(names []string, f func(ctx context.Context, name string) error) {
	e.t.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				deadline := time.Now().Add(90 * time.Second)
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := f(ctx, name)
					cancel()
					if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
						break
					}
					if time.Now().After(deadline) {
						mu.Lock()
						failed = fmt.Errorf("%s: %w", name, err)
						mu.Unlock()
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	if failed != nil {
		e.t.Fatalf("writing sources: %v", failed)
	}
}

// churn makes updates updates and deletes deletes of random sources.
func (e *mirrorEnv) churn(updates, deletes int) {
	e.t.Helper()
	e.rng.Shuffle(len(e.alive), func(i, j int) { e.alive[i], e.alive[j] = e.alive[j], e.alive[i] })
	gone := e.alive[:deletes]
	e.alive = e.alive[deletes:]
	upd := make([]string, updates)
	for i := range upd {
		upd[i] = e.alive[e.rng.IntN(len(e.alive))]
	}
	e.gen++
	value := fmt.Sprintf("v%d", e.gen)
	var ops []string
	for _, n := range gone {
		ops = append(ops, "d/"+n)
	}
	for _, n := range upd {
		ops = append(ops, "u/"+n)
	}
	e.rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	e.parallel(ops, func(ctx context.Context, op string) error {
		kind, name, _ := strings.Cut(op, "/")
		cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
		if kind == "d" {
			return cms.Delete(ctx, name, metav1.DeleteOptions{})
		}
		_, err := cms.Update(ctx, source(name, value+"-"+name), metav1.UpdateOptions{})
		return err
	})
}

// diff compares sources and mirrors: it returns how many mirrors are
// missing or stale, and how many have no source. An error (the API server
// away) counts as not in step.
func (e *mirrorEnv) diff() (missing, extra int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := e.c.Client.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "role in (source,mirror)"})
	if err != nil {
		return 0, 0, err
	}
	src, mir := map[string]string{}, map[string]string{}
	for _, cm := range list.Items {
		if cm.Labels["role"] == "source" {
			src["m-"+cm.Name] = cm.Data["value"]
		} else {
			mir[cm.Name] = cm.Data["value"]
		}
	}
	for k, v := range src {
		if m, ok := mir[k]; !ok || m != v {
			missing++
		}
	}
	for k := range mir {
		if _, ok := src[k]; !ok {
			extra++
		}
	}
	return missing, extra, nil
}

// converge waits until mirrors equal sources and returns when they first
// did. It fails t after timeout, saying how far apart they are.
func (e *mirrorEnv) converge(timeout time.Duration) time.Time {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing, extra, err := e.diff()
		if err == nil && missing == 0 && extra == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("mirrors not in step with sources after %v: %d missing or stale, %d without a source (last error: %v)", timeout, missing, extra, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
