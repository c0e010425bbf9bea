package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// testImage is the tag the tests load and run (make image loads the same).
const testImage = "hook-operator:dev"

// imageSizeBudget is the most the image may take, unpacked: the release's
// Debian root with bash, jq, curl and tini (about 58 MB; curl and its
// libraries 13), kubectl, the operator and the shipped hooks; 141.6 MB
// when it was set, 153.9 with curl (MB as the test counts them, 2^20
// bytes).
const imageSizeBudget = 180 << 20

// engine is the container engine that loads and runs the image here: its
// command line (docker, or podman with this machine's settings) and its
// environment.
type engine struct {
	cmd []string
	env []string
}

// imageBuild is an image the tests build with a hack/image script, once
// per test binary: the engine to run it with, how long the build took, and
// the build's error.
type imageBuild struct {
	once   sync.Once
	engine engine
	took   time.Duration
	err    error
}

// get runs hack/image/name with env and args the first time it is called,
// and returns the engine, failing t if the build failed (then or before).
func (b *imageBuild) get(t *testing.T, name string, env []string, args ...string) engine {
	t.Helper()
	b.once.Do(func() {
		root := repoRoot(t)
		if b.engine, b.err = findEngine(root); b.err != nil {
			return
		}
		start := time.Now()
		b.err = b.engine.script(root, name, env, args...)
		b.took = time.Since(start)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.engine
}

var built imageBuild

// findEngine returns the engine hack/image/engine.sh names (installing
// podman on first use).
func findEngine(root string) (engine, error) {
	out, err := exec.Command(filepath.Join(root, "hack", "image", "engine.sh")).Output()
	if err != nil {
		return engine{}, fmt.Errorf("hack/image/engine.sh: %w", err)
	}
	return engine{cmd: strings.Fields(strings.TrimSpace(string(out))),
		env: append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(root, "hack", "image", "containers.conf"))}, nil
}

// script runs hack/image/<name> with args, in the engine's environment
// and env besides, and returns its error with the end of its output.
func (e engine) script(root, name string, env []string, args ...string) error {
	cmd := exec.Command(filepath.Join(root, "hack", "image", name), args...)
	cmd.Env = append(slices.Clip(e.env), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/image/%s: %w\n%s", name, err, testoperator.Tail(string(out), 40))
	}
	return nil
}

// builtImage loads the release's image of this machine's architecture with
// hack/image/build.sh, as make image does (make test runs it first; this
// builds it again from the tree the tests run on, kubectl and the Debian
// root from the cache), once per test binary, and returns the engine to run
// it with.
func builtImage(t *testing.T) engine {
	t.Helper()
	return built.get(t, "build.sh", nil, testImage)
}

// run runs the engine with args and returns its output.
func (e engine) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(e.cmd[0], append(e.cmd[1:], args...)...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (e engine) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.run(t, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(e.cmd, " "), strings.Join(args, " "), err, out)
	}
	return out
}

// The image, the release's as make image loads it, run as deploy/ runs it
// (user 65532, read-only root, /tmp a tmpfs, no capabilities), with a
// folder of hooks mounted read-only, and within its size budget; run with
// its own settings alone, it runs as 65532:
//   - at /hooks, replacing the shipped hooks: the operator is ready, its
//     hook acts on the local cluster both through the operator (an
//     operation) and through the image's kubectl, it runs as 65532, and
//     SIGTERM stops it well within the grace period with exit code 0;
//   - at /hooks/custom, next to the bash helpers in /hooks/lib: it is the
//     only hook loaded (the shipped demonstrations are in /examples/hooks,
//     and run only when asked for), and it acts as above;
//   - at /hooks/custom, changed while the container runs (from the host, as
//     a ConfigMap volume is updated): a hook added acts without a restart,
//     a configuration broken is reported and changes nothing, and fixed it
//     applies.
func TestIntegrationImageRunsMountedHooks(t *testing.T) {
	c := testcluster.Get(t)
	e := builtImage(t)
	size, err := strconv.ParseInt(e.must(t, "image", "inspect", "--format", "{{.Size}}", testImage), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image size: %.1f MB (budget %.0f MB)", float64(size)/(1<<20), float64(imageSizeBudget)/(1<<20))
	if size > imageSizeBudget {
		t.Errorf("the image takes %.1f MB, over its budget of %.0f MB", float64(size)/(1<<20), float64(imageSizeBudget)/(1<<20))
	}
	if uid := e.must(t, "run", "--rm", "--entrypoint", "/usr/bin/id", testImage, "-u"); uid != "65532" {
		t.Errorf("the image runs as uid %q by itself, want 65532", uid)
	}
	if out := e.must(t, "run", "--rm", testImage, "version"); !strings.HasPrefix(out, "hook-operator v") {
		t.Errorf("the image's version command printed:\n%s", out)
	}

	t.Run("at /hooks", func(t *testing.T) {
		ns := c.Namespace(t)
		ctr := startContainer(t, e, c, ns, "/hooks")
		cms := c.Client.CoreV1().ConfigMaps(ns)
		ping(t, c, ns)
		waitFor(t, "the hook's operation and its kubectl annotation", time.Minute, func() bool {
			ack, err := cms.Get(context.Background(), "ping-ack", metav1.GetOptions{})
			return err == nil && ack.Data["uid"] != "" && annotated(c, ns)
		}, ctr.logs)
		if ack, _ := cms.Get(context.Background(), "ping-ack", metav1.GetOptions{}); ack.Data["uid"] != "65532" {
			t.Errorf("the hook ran as uid %q, want 65532", ack.Data["uid"])
		}
		if code, body := get("http://" + ctr.addr + "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d %s", code, body)
		}
		if code, body := get("http://" + ctr.addr + "/metrics"); code != http.StatusOK || !strings.Contains(body, "hook_operator_hook_runs_total") {
			t.Errorf("/metrics: %d, no hook_operator_hook_runs_total", code)
		}
		start := time.Now()
		e.must(t, "stop", "--time", "30", ctr.name)
		took := time.Since(start)
		code := e.must(t, "inspect", "--format", "{{.State.ExitCode}}", ctr.name)
		t.Logf("stopped by SIGTERM in %s, exit code %s", took.Round(10*time.Millisecond), code)
		if code != "0" {
			t.Errorf("exit code %s after SIGTERM, want 0\n%s", code, ctr.logs())
		}
		if took > 20*time.Second {
			t.Errorf("SIGTERM took %s to stop the container; the operator should stop within its grace period, well before the engine's 30 s kill", took)
		}
	})

	t.Run("at /hooks/custom", func(t *testing.T) {
		ns := c.Namespace(t)
		ctr := startContainer(t, e, c, ns, "/hooks/custom")
		ping(t, c, ns)
		waitFor(t, "the hook's operation and its kubectl annotation", time.Minute, func() bool {
			_, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "ping-ack", metav1.GetOptions{})
			return err == nil && annotated(c, ns)
		}, ctr.logs)
		// Only what is mounted runs: the demonstrations are in
		// /examples/hooks, and /hooks/lib holds no hook.
		logs := ctr.logs()
		if n := strings.Count(logs, `"msg":"hook loaded"`); n != 1 || !strings.Contains(logs, `"hook":"custom/ack.sh"`) {
			t.Errorf("the operator loaded %d hooks; want the mounted custom/ack.sh alone:\n%s", n, logs)
		}
	})

	// The mounted folder changes while the container runs (from the host,
	// as a ConfigMap volume's update does): a hook added acts without a
	// restart; a configuration broken is reported and changes nothing;
	// fixed, it applies.
	t.Run("reloaded in place", func(t *testing.T) {
		ns := c.Namespace(t)
		ctr := startContainer(t, e, c, ns, "/hooks/custom")
		second := filepath.Join(ctr.hooks, "second.sh")
		// A reload is counted once its new bindings have listed: objects
		// made after that are events to them.
		reloads := func(result string, n int) func() bool {
			return func() bool {
				_, body := get("http://" + ctr.addr + "/metrics")
				return strings.Contains(body, fmt.Sprintf("hook_operator_hooks_reload_total{result=%q} %d\n", result, n))
			}
		}
		// Each version is written beside the folder and renamed into it,
		// as deployment tools and the kubelet replace files: writing a
		// script in place while the operator runs it fails with "text
		// file busy".
		replace := func(content string) {
			t.Helper()
			tmp := filepath.Join(filepath.Dir(ctr.hooks), "second.sh.new")
			must(t, os.WriteFile(tmp, []byte(content), 0o755))
			must(t, os.Rename(tmp, second))
		}
		replace(ackHookFor(ns, "second"))
		waitFor(t, "the reload of the added hook", time.Minute, reloads("applied", 1), ctr.logs)
		pingAs(t, c, ns, "two", "second")
		waitFor(t, "the added hook's ack", time.Minute, func() bool { return acked(c, ns, "two") }, ctr.logs)

		replace("#!/usr/bin/env bash\necho 'not a configuration'\n")
		waitFor(t, "the report of the broken configuration", time.Minute, reloads("invalid", 1), ctr.logs)
		pingAs(t, c, ns, "three", "ping")
		waitFor(t, "the running hook's ack after the broken change", time.Minute, func() bool { return acked(c, ns, "three") }, ctr.logs)

		replace(ackHookFor(ns, "fixed"))
		waitFor(t, "the reload of the fixed hook", time.Minute, reloads("applied", 2), ctr.logs)
		pingAs(t, c, ns, "four", "fixed")
		waitFor(t, "the fixed hook's ack", time.Minute, func() bool { return acked(c, ns, "four") }, ctr.logs)
		if !strings.Contains(ctr.logs(), "no configuration was reloaded") {
			t.Error("the log does not say that the running hooks stay after the broken change")
		}
		if code, body := get("http://" + ctr.addr + "/metrics"); !strings.Contains(body, `hook_operator_hooks_reload_total{result="invalid"} 1`) {
			t.Errorf("/metrics (%d) does not count the invalid reload once:\n%s", code, body)
		}
	})
}

// container is one run of the image.
type container struct {
	name, addr string
	// hooks is the host folder mounted into the container.
	hooks string
	logs  func() string
}

// startContainer runs the image as deploy/ runs it, with its own CMD and
// the ack hook (see ackHook) for namespace ns mounted read-only at mount; it
// returns once /readyz answers 200.
func startContainer(t *testing.T, e engine, c *testcluster.Cluster, ns, mount string) container {
	t.Helper()
	return startImage(t, e, c, ns, mount, testImage, map[string]string{"ack.sh": ackHook(ns)})
}

// startImage runs image as deploy/ runs it, with its own CMD and the hooks
// (file name -> content) mounted read-only at mount (none with mount "":
// the image's own); it returns once /readyz answers 200.
func startImage(t *testing.T, e engine, c *testcluster.Cluster, ns, mount, image string, hookFiles map[string]string) container {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755)) // the container's user reads what is mounted from it
	kubeconfig := flatKubeconfig(t, c, dir)
	hooks := filepath.Join(dir, "hooks")
	must(t, os.Mkdir(hooks, 0o755))
	for name, content := range hookFiles {
		must(t, os.WriteFile(filepath.Join(hooks, name), []byte(content), 0o755))
	}

	addr := "127.0.0.1:" + testoperator.FreePort(t)
	name := "hook-operator-test-" + ns
	run := append(runLockedDown(name, kubeconfig), "-e", "HOOK_OPERATOR_LISTEN_ADDRESS="+addr, "-e", "HOOK_OPERATOR_LOG_FORMAT=json")
	if mount != "" {
		run = append(run, "-v", hooks+":"+mount+":ro")
	}
	run = append(run, image)
	e.must(t, run...)
	t.Cleanup(func() { _, _ = e.run(t, "rm", "-f", name) })
	ctr := container{name: name, addr: addr, hooks: hooks, logs: func() string { out, _ := e.run(t, "logs", name); return testoperator.Tail(out, 60) }}
	waitFor(t, "/readyz 200 from the container", 90*time.Second, func() bool {
		code, _ := get("http://" + addr + "/readyz")
		return code == http.StatusOK
	}, ctr.logs)
	return ctr
}

// runLockedDown is the start of the engine's arguments that run the image
// detached as the container name, on the host's network, as the image's
// non-root user with a read-only root and a /tmp of its own, no
// capabilities and no new privileges, with the kubeconfig at kubeconfig
// mounted at /kube/config.
func runLockedDown(name, kubeconfig string) []string {
	return []string{"run", "-d", "--name", name, "--network", "host",
		"--user", "65532:65532", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"-v", kubeconfig + ":/kube/config:ro", "-e", "KUBECONFIG=/kube/config"}
}

// flatKubeconfig writes c's kubeconfig to dir/kubeconfig with the client
// certificates inline and readable by the container's user, for mounting
// at /kube/config, and returns its path.
func flatKubeconfig(t *testing.T, c *testcluster.Cluster, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	flat, err := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig, "config", "view", "--flatten", "--minify").Output()
	must(t, err)
	must(t, os.WriteFile(path, flat, 0o644))
	return path
}

// ackHook is a bash hook for ConfigMaps labelled ping=yes in ns: for each
// one added, it annotates it with the image's kubectl and asks the
// operator to create <name>-ack holding the uid the hook ran as.
func ackHook(ns string) string { return ackHookFor(ns, "ping") }

// ackHookFor is ackHook for ConfigMaps labelled <label>=yes.
func ackHookFor(ns, label string) string {
	return `#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"pings","kind":"ConfigMap","executeHookOnSynchronization":false,
    "namespace":{"nameSelector":{"matchNames":["` + ns + `"]}},"labelSelector":{"matchLabels":{"` + label + `":"yes"}}}]}'
  exit 0
fi
for name in $(jq -r '.[] | select(.type == "Event" and .watchEvent == "Added") | .object.metadata.name' "$BINDING_CONTEXT_PATH"); do
  kubectl -n ` + ns + ` annotate configmap "$name" seen-by-kubectl=yes --overwrite >/dev/null
  jq -n --arg name "$name-ack" --arg uid "$(id -u)" \
    '{operation: "CreateOrUpdate", object: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: $name, namespace: "` + ns + `"}, data: {uid: $uid}}}' \
    >>"$KUBERNETES_PATCH_PATH"
done
`
}

func ping(t *testing.T, c *testcluster.Cluster, ns string) { pingAs(t, c, ns, "ping", "ping") }

// pingAs creates the ConfigMap name labelled <label>=yes.
func pingAs(t *testing.T, c *testcluster.Cluster, ns, name, label string) {
	t.Helper()
	_, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: "yes"}}}, metav1.CreateOptions{})
	must(t, err)
}

// acked reports whether the ack hook answered the ConfigMap name.
func acked(c *testcluster.Cluster, ns, name string) bool {
	_, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), name+"-ack", metav1.GetOptions{})
	return err == nil
}

func annotated(c *testcluster.Cluster, ns string) bool {
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "ping", metav1.GetOptions{})
	return err == nil && cm.Annotations["seen-by-kubectl"] == "yes"
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool, logs func() string) {
	t.Helper()
	poll.Every(t, 200*time.Millisecond, timeout, what, cond, func() string { return "the container's log:\n" + logs() })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
