package deploy_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The image's ENTRYPOINT and CMD, run on this machine against the local
// cluster from the image's files (podRoot: the shipped hooks and the example
// ConfigMap at /hooks/custom), with the image's environment: the operator
// starts, /readyz answers 200 on the listen address, and SIGTERM ends it
// with exit code 0.
//
// Paths of the image (/usr/local/bin, /hooks, /tmp) are mapped into the temp
// root. Differences from the Pod, each for a reason:
//   - tini: run when the machine has it; the project's machines do not, and
//     then the operator is started directly, as tini would exec it.
//   - --kubeconfig is added: a Pod uses its ServiceAccount instead.
//   - --dry-run is added: the shipped hooks watch their kinds in every
//     namespace, and the hooks' own tests run their operators on the same
//     cluster at the same time; a second operator writing to their objects
//     would break them. Start-up, the listener and shutdown are the same.
//   - HOOK_OPERATOR_LISTEN_ADDRESS is set to a free local port, as a Pod's
//     env may set it, because :9115 may be taken here.
func TestIntegrationEntrypoint(t *testing.T) {
	c := testcluster.Get(t)
	testoperator.InstallCRDs(t, c, crdFiles(t)...)
	pod := podRoot(t)
	final := readDockerfile(t).final()

	inImage := func(p string) string {
		if strings.HasPrefix(p, "/") {
			return filepath.Join(pod, p)
		}
		return p
	}
	var argv []string
	for _, a := range append(final.last("ENTRYPOINT").exec, final.last("CMD").exec...) {
		argv = append(argv, inImage(a))
	}
	if argv[0] == inImage("/usr/bin/tini") {
		if tini, err := exec.LookPath("tini"); err == nil {
			argv[0] = tini
		} else {
			t.Logf("tini is not installed here: starting %s directly, as tini would", argv[2])
			argv = argv[2:]
		}
	}
	argv = append(argv, "--kubeconfig", c.Kubeconfig, "--dry-run")

	addr := freeAddress(t)
	env := []string{
		// The image's PATH has /usr/local/bin first; bash, jq and kubectl
		// come from the machine.
		"PATH=" + filepath.Join(pod, "usr", "local", "bin") + ":" + os.Getenv("PATH"),
		// In the image /tmp is the system temp dir (the debug socket's place).
		"TMPDIR=" + filepath.Join(pod, "tmp"),
	}
	for k, v := range final.env() {
		if k == "VERSION" || k == "COMMIT" {
			continue // build arguments
		}
		env = append(env, k+"="+inImage(v))
	}
	env = append(env, "HOOK_OPERATOR_LISTEN_ADDRESS="+addr)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = "/", env
	var logs testoperator.Buffer
	cmd.Stderr, cmd.Stdout = &logs, io.Discard
	t.Logf("running %s", strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // if it is still running
		if t.Failed() {
			t.Logf("operator log:\n%s", logs.String())
		}
	})

	// Ready.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, body := get("http://" + addr + "/readyz")
		if code == http.StatusOK {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the operator exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 after 2m: %d %s", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body := get("http://" + addr + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get("http://" + addr + "/metrics"); code != http.StatusOK || !strings.Contains(body, "hook_operator_") {
		t.Errorf("/metrics: %d, no hook_operator_ metrics", code)
	}
	for _, h := range []string{"custom/example.sh", "hello/greet-configmaps.sh", "memcached/memcached"} {
		if !strings.Contains(logs.String(), h) {
			t.Errorf("the log never names the hook %s", h)
		}
	}

	// SIGTERM: a clean exit.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v; want exit code 0", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the operator did not exit within 45s of SIGTERM")
	}
}

// crdFiles returns the file names in deploy/crds.
func crdFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// freeAddress returns a local address with a port that is free now.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// get returns the status code and body of a GET, or 0 and the error.
func get(url string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return 0, op.Err.Error()
		}
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
