// Package testcluster hands integration tests the project's local Kubernetes
// cluster (see hack/cluster/up.sh): a client for it, started on first use and
// reused while healthy, and a fresh namespace per test that is deleted when
// the test ends.
//
// A test that asks for the cluster and cannot have it fails with the reason;
// it never skips and never falls back to a fake client.
//
// Set HOOK_OPERATOR_TEST_KUBECONFIG to run the tests against another cluster
// instead of starting the local one.
package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/localcluster"
)

// EnvKubeconfig names a kubeconfig to test against instead of the local cluster.
const EnvKubeconfig = "HOOK_OPERATOR_TEST_KUBECONFIG"

// Cluster is a running cluster and clients for it, shared by the tests of
// one test binary.
type Cluster struct {
	// Kubeconfig is the path of the cluster's kubeconfig file, for tests that
	// start the operator binary or kubectl.
	Kubeconfig string
	// Config is the client configuration, with rate limits lifted.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

var (
	once    sync.Once
	shared  *Cluster
	initErr error
)

// Get returns the shared cluster, starting it on first use. It fails t with
// the reason when the cluster cannot be had.
func Get(t testing.TB) *Cluster {
	t.Helper()
	once.Do(func() { shared, initErr = connect() })
	if initErr != nil {
		t.Fatalf("testcluster: the local Kubernetes cluster is not available: %v", initErr)
	}
	return shared
}

func connect() (*Cluster, error) {
	path := os.Getenv(EnvKubeconfig)
	if path == "" {
		var err error
		if path, err = start(); err != nil {
			return nil, err
		}
	}
	c, err := clientsFor(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return nil, fmt.Errorf("cluster of %s is not ready: %w", path, err)
	}
	return c, nil
}

// clientsFor returns the Cluster of the kubeconfig at path.
func clientsFor(path string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	// Tests create objects quickly; the client's default 5 QPS would make
	// them slow without testing anything.
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Cluster{Kubeconfig: path, Config: cfg}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// start runs hack/cluster/up.sh and returns the kubeconfig path it prints.
func start() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path, err := localcluster.Up(context.Background(), root)
	if err == nil && path == "" {
		err = fmt.Errorf("hack/cluster/up.sh printed no kubeconfig path")
	}
	return path, err
}

// RepoRoot returns the root folder of the hook-operator module, found by
// walking up from the working directory (a test's package folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/hook-operator/hook-operator\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the hook-operator module (no go.mod naming github.com/hook-operator/hook-operator above the working directory)")
		}
		dir = parent
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// Namespace creates a namespace for t, waits until Pods can be created in it
// (its default ServiceAccount exists), and deletes it when t ends.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "test-",
			Labels:       map[string]string{"hook-operator.dev/test": sanitize(t.Name())},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testcluster: create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testcluster: delete namespace %s: %v", ns.Name, err)
		}
	})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("testcluster: namespace %s: default ServiceAccount never appeared (is kube-controller-manager running?): %v", ns.Name, err)
	}
	return ns.Name
}

// sanitize turns a test name into a valid label value.
func sanitize(name string) string {
	b := []byte(name)
	for i, ch := range b {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.'
		if !ok {
			b[i] = '_'
		}
	}
	s := strings.Trim(string(b), "-_.")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-_.")
	}
	return s
}
