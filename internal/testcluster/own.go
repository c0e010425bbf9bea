package testcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hook-operator/hook-operator/internal/localcluster"
)

// Own is a cluster of a test's own (see Owned): its control plane can be
// stopped and started without disturbing the tests on the shared cluster.
type Own struct {
	*Cluster
	// Name is the cluster's kwokctl name.
	Name    string
	kwokctl string
	workdir string

	// unlock releases the ports lock that Stop takes and Start releases
	// (localcluster.LockPorts); nil when not held.
	mu     sync.Mutex
	unlock func()
}

// ownPrefix begins the name of every cluster a test starts for itself.
const ownPrefix = "hook-operator-"

var (
	ownMu   sync.Mutex
	ownByID = map[string]*Own{}
)

// Owned returns the cluster named name (hook-operator-<purpose>, a
// lowercase name: make test removes every such cluster when its tests end,
// with hack/cluster/down.sh --tests), starting it with hack/cluster/up.sh or reusing it when
// it is healthy. Tests that stop its control plane must not share it with
// each other at the same time; the caller serializes them.
func Owned(t testing.TB, name string) *Own {
	t.Helper()
	return OwnedWithGates(t, name, "")
}

// OwnedWithGates is Owned for a cluster whose control plane runs with the
// Kubernetes feature gates gates ("Gate=true,..."; "" for none), such as
// alpha features, which the shared cluster leaves off.
func OwnedWithGates(t testing.TB, name, gates string) *Own {
	t.Helper()
	if !strings.HasPrefix(name, ownPrefix) || name == ownPrefix {
		t.Fatalf("testcluster: a test's own cluster is named %s<purpose>, not %q: make test removes those when it ends", ownPrefix, name)
	}
	ownMu.Lock()
	defer ownMu.Unlock()
	if o := ownByID[name]; o != nil {
		return o
	}
	o, err := startOwn(name, gates)
	if err != nil {
		t.Fatalf("testcluster: cluster %s is not available: %v", name, err)
	}
	ownByID[name] = o
	return o
}

func startOwn(name, gates string) (*Own, error) {
	env := []string{"HOOK_OPERATOR_CLUSTER=" + name}
	if gates != "" {
		env = append(env, "HOOK_OPERATOR_CLUSTER_FEATURE_GATES="+gates)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	kubeconfig, err := localcluster.Up(context.Background(), root, env...)
	if err != nil {
		return nil, err
	}
	bin, err := localcluster.Binaries(context.Background(), root, env...)
	if err != nil {
		return nil, err
	}
	c, err := clientsFor(kubeconfig)
	if err != nil {
		return nil, err
	}
	// up.sh keeps the cluster's state next to its kubeconfig.
	return &Own{Cluster: c, Name: name, kwokctl: filepath.Join(bin, "kwokctl"), workdir: filepath.Join(filepath.Dir(kubeconfig), "kwok")}, nil
}

// Stop stops every process of the control plane (etcd included).
//
// It holds the local clusters' ports lock until the control plane answers
// again after Start (or the test ends), so that no cluster made meanwhile
// takes this one's ports.
func (o *Own) Stop(t testing.TB) {
	t.Helper()
	unlock, err := localcluster.LockPorts()
	if err != nil {
		t.Fatalf("testcluster: %s: %v", o.Name, err)
	}
	o.mu.Lock()
	o.unlock = unlock
	o.mu.Unlock()
	t.Cleanup(o.releasePorts)
	o.kwok(t, "stop")
}

// releasePorts releases the ports lock Stop took, if it is still held.
func (o *Own) releasePorts() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unlock != nil {
		o.unlock()
		o.unlock = nil
	}
}

// Start starts the control plane again after Stop, and returns without
// waiting for it to answer (see Ready).
//
// The ports lock Stop took is released once /readyz answers (Ready,
// WaitReady): until then the API server may not have taken its port again.
func (o *Own) Start(t testing.TB) {
	t.Helper()
	o.kwok(t, "start")
}

func (o *Own) kwok(t testing.TB, verb string) {
	t.Helper()
	cmd := exec.Command(o.kwokctl, verb, "cluster", "--name", o.Name)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+o.workdir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kwokctl %s cluster %s: %v\n%s", verb, o.Name, err, tail(string(out), 20))
	}
}

// Ready reports whether kube-apiserver's /readyz answers 200 now.
func (o *Own) Ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := o.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return false
	}
	o.releasePorts()
	return true
}

// WaitReady polls /readyz every 50 ms until it answers 200, and returns
// the time it first did.
func (o *Own) WaitReady(t testing.TB, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if o.Ready() {
			at = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("testcluster: %s: /readyz did not answer 200 within %v", o.Name, timeout)
	}
	return at
}
