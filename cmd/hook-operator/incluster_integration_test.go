package main_test

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// serviceAccountDir is where a Pod's ServiceAccount token and CA are, and
// where client-go's in-cluster configuration reads them.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// The operator runs as a Pod would: no kubeconfig, the ServiceAccount's
// token and the cluster's CA at the in-cluster paths (bind-mounted in a
// mount namespace of its own), KUBERNETES_SERVICE_HOST and _PORT set, and
// only the RBAC that `hook-operator rbac` generates for the shipped hooks.
// The shipped hooks work (hello, Memcached, FlightTicket; SampleDB's are
// checked the same way by hand, see its docs); a write they did not declare
// is refused, and the run's error says so and what to do.
func TestIntegrationInClusterWithGeneratedRBAC(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("this test bind-mounts the ServiceAccount files at the in-cluster path in a private mount namespace, which needs root; run the tests as root (as on the project's machines)")
	}
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	ctx := context.Background()
	bin := testoperator.Binary(t)
	testoperator.InstallCRDs(t, c, "memcacheds.cache.example.com.yaml", "flighttickets.flights.com.yaml")
	hooks := testoperator.Hooks(t, "hello", "memcached", "flights")
	writeHook(t, hooks, "rogue.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"labelSelector":{"matchLabels":{"rogue":"yes"}},"executeHookOnSynchronization":false}]}`, `echo '{"operation":"Create","object":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"stolen","namespace":"`+ns+`"}}}' >> "$KUBERNETES_PATCH_PATH"
`))

	// The ServiceAccount, and the generated RBAC bound to it.
	sa := "op-" + ns
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	must(t, err)
	root, err := testcluster.RepoRoot()
	must(t, err)
	out, err := exec.Command(bin, "rbac", "--hooks-dir", hooks, "--crds", filepath.Join(root, "deploy", "crds"),
		"--name", sa, "--namespace", ns, "--service-account", sa).Output()
	if err != nil {
		t.Fatalf("hook-operator rbac: %v", err)
	}
	if bytes.Contains(out, []byte("'*'")) || bytes.Contains(out, []byte(`"*"`)) {
		t.Fatalf("the generated RBAC uses *:\n%s", out)
	}
	applyRBAC(t, c, out)

	// The in-cluster files: a token of the ServiceAccount, the CA, the namespace.
	tok, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))},
	}, metav1.CreateOptions{})
	must(t, err)
	saDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(saDir, "token"), []byte(tok.Status.Token), 0o600))
	ca := c.Config.CAData
	if len(ca) == 0 {
		ca, err = os.ReadFile(c.Config.CAFile)
		must(t, err)
	}
	must(t, os.WriteFile(filepath.Join(saDir, "ca.crt"), ca, 0o600))
	must(t, os.WriteFile(filepath.Join(saDir, "namespace"), []byte(ns), 0o600))
	must(t, os.MkdirAll(serviceAccountDir, 0o755))
	u, err := url.Parse(c.Config.Host)
	must(t, err)

	logs := &testoperator.Buffer{}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" `+serviceAccountDir+` && shift && exec "$@"`, "sh", saDir,
		bin, "start", "--hooks-dir", hooks, "--log-format", "json", "--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0",
		"--debug-socket", filepath.Join(t.TempDir(), "debug.sock"), "--retry-initial-delay", "500ms", "--retry-max-delay", "2s")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port(),
	}
	startLogged(t, cmd, logs)
	waitUntil(t, "start-up with the ServiceAccount", func() bool {
		return strings.Contains(logs.String(), "all bindings started")
	}, logs.String)
	if strings.Contains(logs.String(), "forbidden") {
		t.Errorf("the generated RBAC lacks a read the bindings need:\n%s", logs.String())
	}

	// The shipped hooks work.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hi", Namespace: ns, Labels: map[string]string{"hook-operator.dev/hello": "true"}}, Data: map[string]string{"name": "pod"}}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "the hello hook's greeting", func() bool {
		got, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "hi", metav1.GetOptions{})
		return err == nil && got.Annotations["hook-operator.dev/greeting"] == "hello, pod"
	}, logs.String)
	memcacheds := schema.GroupVersionResource{Group: "cache.example.com", Version: "v1", Resource: "memcacheds"}
	mc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": "mc", "namespace": ns}, "spec": map[string]any{"size": int64(2)},
	}}
	_, err = c.Dynamic.Resource(memcacheds).Namespace(ns).Create(ctx, mc, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "the Memcached's Deployment and status", func() bool {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "mc", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			return false
		}
		got, err := c.Dynamic.Resource(memcacheds).Namespace(ns).Get(ctx, "mc", metav1.GetOptions{})
		nodes, _, _ := unstructured.NestedStringSlice(got.Object, "status", "nodes")
		return err == nil && len(nodes) == 2
	}, logs.String)

	tickets := schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}
	ft := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flights.com/v1", "kind": "FlightTicket",
		"metadata": map[string]any{"name": "trip", "namespace": ns},
		"spec":     map[string]any{"from": "Mumbai", "to": "London", "number": int64(2)},
	}}
	_, err = c.Dynamic.Resource(tickets).Namespace(ns).Create(ctx, ft, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "the FlightTicket booked", func() bool {
		got, err := c.Dynamic.Resource(tickets).Namespace(ns).Get(ctx, "trip", metav1.GetOptions{})
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		_, cmErr := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "trip-booking", metav1.GetOptions{})
		return err == nil && phase == "Booked" && cmErr == nil
	}, logs.String)

	// A write nobody declared is refused, and the error says what to do.
	rogue := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trigger", Namespace: ns, Labels: map[string]string{"rogue": "yes"}}}
	_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, rogue, metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "the refused write reported", func() bool {
		l := logs.String()
		return strings.Contains(l, `operation 0 (Create v1/Secret `+ns+`/stolen)`) && strings.Contains(l, `cannot create resource \"secrets\"`) &&
			strings.Contains(l, "declare the write under writes")
	}, logs.String)
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "stolen", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the undeclared Secret exists: %v", err)
	}
}

// applyRBAC creates the generated objects and deletes the cluster-scoped
// ones when the test ends.
func applyRBAC(t *testing.T, c *testcluster.Cluster, data []byte) {
	t.Helper()
	ctx := context.Background()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &u.Object); err != nil || u.GetKind() == "" {
			continue
		}
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
		var err error
		if u.GetNamespace() != "" {
			_, err = c.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, &u, metav1.CreateOptions{})
		} else {
			_, err = c.Dynamic.Resource(gvr).Create(ctx, &u, metav1.CreateOptions{})
			name := u.GetName()
			t.Cleanup(func() { _ = c.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		if err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
