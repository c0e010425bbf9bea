// Package localcluster is the harnesses' (the bench's, the soak's) access
// to the local cluster of hack/cluster: start it or reuse a healthy one
// (Up), find its binaries (Binaries), make a client config with the
// harness's own request rate (Config), and pick ports on 127.0.0.1 for
// the servers its API server calls there, the webhooks registered by URL
// (FreePort). internal/testcluster, the integration tests' access, starts
// the cluster with it too.
package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Up starts the local cluster with hack/cluster/up.sh of the repository at
// root, or reuses it when it is healthy, and returns its kubeconfig. env
// ("K=V") is added to the script's environment: HOOK_OPERATOR_CLUSTER=NAME
// makes it a cluster of that name, apart from the shared one.
//
// It holds the ports lock (LockPorts) while the script runs.
func Up(ctx context.Context, root string, env ...string) (string, error) {
	unlock, err := LockPorts()
	if err != nil {
		return "", err
	}
	defer unlock()
	return script(ctx, root, "up.sh", env)
}

// LockPorts takes the lock on the local clusters' ports and returns what
// releases it. Ports are the machine's, so the lock is too: one file per
// user in the temporary folder, shared by every process and every cache
// ($HOOK_OPERATOR_CACHE) of that user. kwokctl picks free ports for a
// cluster it makes, and would take those of a cluster whose control plane
// a test has stopped, which then cannot start again (its restarted API
// server finds its port taken, and the test talks to the other cluster's).
// So Up holds the lock while a cluster is made, and a test holds it from
// stopping a control plane until it has started again (testcluster.Own).
// Whoever holds it must not call Up meanwhile.
func LockPorts() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hook-operator-ports-%d.lock", os.Getuid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the local clusters' ports lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil // closing releases the lock
}

// Binaries returns the folder of the local cluster's binaries (kwokctl
// among them), as hack/cluster/build.sh --dir prints it, with env added as
// for Up.
func Binaries(ctx context.Context, root string, env ...string) (string, error) {
	return script(ctx, root, "build.sh", env, "--dir")
}

// EnvKubeVersion picks the Kubernetes release of the local cluster's
// control plane (make test-matrix); unset, the one hack/cluster/versions.env
// pins. build.sh and up.sh read it, and so do tests that check the version.
const EnvKubeVersion = "HOOK_OPERATOR_KUBE_VERSION"

// KubeVersion returns the Kubernetes release the local cluster of the
// repository at root runs: $HOOK_OPERATOR_KUBE_VERSION, else the pinned one.
func KubeVersion(root string) (string, error) {
	if v := os.Getenv(EnvKubeVersion); v != "" {
		return v, nil
	}
	path := filepath.Join(root, "hack", "cluster", "versions.env")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "KUBE_VERSION="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s sets no KUBE_VERSION", path)
}

// script runs hack/cluster/<name> with args and returns its stdout,
// trimmed; its error holds the last 40 lines the script wrote on stderr.
func script(ctx context.Context, root, name string, env []string, args ...string) (string, error) {
	path := filepath.Join(root, "hack", "cluster", name)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", path, err, lastLines(stderr.String(), 40))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Config returns a client config for kubeconfig that sends at most qps
// requests a second, and burst at once: a harness that is the load sets
// them high, so that its own client does not limit it.
func Config(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a listener a test or the bench names. It is drawn from
// 20000-29999, below the kernel's ephemeral range (ip_local_port_range)
// and the ports kwokctl counts down from 32767 for the local clusters: a
// listener bound to port 0 meanwhile (as the operators the tests and the
// bench start bind their metrics and probe listeners) is never given it
// before its own operator binds it.
func FreePort() (string, error) {
	low, high := 20000, 30000
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n < high {
				high = n
			}
		}
	}
	if high-low < 1000 {
		low, high = 10000, 20000
	}
	for range 100 {
		port := strconv.Itoa(low + rand.IntN(high-low))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
			ln.Close()
			return port, nil
		}
	}
	return "", fmt.Errorf("no free port in %d-%d after 100 tries", low, high-1)
}
