package main_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// With --metrics-secure, /metrics is served over HTTPS to a token the API
// server authenticates (TokenReview) whose user may get /metrics
// (SubjectAccessReview): no token gets 401, a ServiceAccount without the
// metrics-reader role 403, one with it 200 and the metrics; the plain
// listener keeps the probes and serves no metrics.
func TestIntegrationMetricsSecure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	port := testoperator.FreePort(t)

	h.hook(t, "startup.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "exit 0\n"))
	o := h.start(t, "--metrics-secure", "--metrics-secure-address", "127.0.0.1:"+port)

	reader, other := metricsReader(t, h.c, h.ns), serviceAccountToken(t, h.c, h.ns, "other")

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url, token string) (int, string) { return fetch(client, url, token) }
	metricsURL := "https://127.0.0.1:" + port + "/metrics"
	var code int
	var body string
	waitUntil(t, "200 with the metrics for the reader", func() bool {
		code, body = get(metricsURL, reader)
		return code == http.StatusOK && strings.Contains(body, "hook_operator_live_ticks_total")
	}, func() string { return strconv.Itoa(code) + " " + body + "\n" + o.logs.String() })
	if code, body := get(metricsURL, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %s, want 401", code, body)
	}
	if code, body := get(metricsURL, "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("a token the API server does not know: %d %s, want 401", code, body)
	}
	if code, body := get(metricsURL, other); code != http.StatusForbidden || !strings.Contains(body, "system:serviceaccount:"+h.ns+":other") {
		t.Errorf("a ServiceAccount without the role: %d %s, want 403 naming it", code, body)
	}
	if strings.Contains(o.logs.String(), other) || strings.Contains(o.logs.String(), "not-a-token") {
		t.Error("a token was logged")
	}

	m := regexp.MustCompile(`"address":"([^"]+)","debugSocket".*"msg":"serving /healthz and /readyz"`).FindStringSubmatch(o.logs.String())
	if m == nil {
		t.Fatalf("no plain listener logged:\n%s", o.logs.String())
	}
	plain := "http://" + m[1]
	if code, _ := get(plain+"/metrics", reader); code != http.StatusNotFound {
		t.Errorf("the plain listener's /metrics: %d, want 404 (served over HTTPS only)", code)
	}
	if code, _ := get(plain+"/healthz", ""); code != http.StatusOK {
		t.Errorf("the plain listener's /healthz: %d, want 200", code)
	}
}

// startSecureMetrics starts an operator with an onStartup hook and
// --metrics-secure on a free port, and makes a ServiceAccount allowed to
// read its metrics: the cluster, the test's namespace, the address, the
// operator and the reader's token.
func startSecureMetrics(t *testing.T) (*testcluster.Cluster, string, string, *observed, string) {
	t.Helper()
	h := newHarness(t)
	addr := "127.0.0.1:" + testoperator.FreePort(t)
	h.hook(t, "startup.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "exit 0\n"))
	o := h.start(t, "--metrics-secure", "--metrics-secure-address", addr)
	return h.c, h.ns, addr, o, metricsReader(t, h.c, h.ns)
}

// metricsReader makes the ServiceAccount "reader" in ns, allowed to get
// /metrics, and returns its token.
func metricsReader(t *testing.T, c *testcluster.Cluster, ns string) string {
	t.Helper()
	role := "hook-operator-metrics-reader-" + ns
	grantClusterRole(t, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}})
	return serviceAccountToken(t, c, ns, "reader")
}

// grantClusterRole creates role and binding (which binds it), both
// deleted when the test ends.
func grantClusterRole(t *testing.T, c *testcluster.Cluster, role *rbacv1.ClusterRole, binding *rbacv1.ClusterRoleBinding) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	must(t, err)
	_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	must(t, err)
}

// serviceAccountToken makes the ServiceAccount sa in ns and returns a
// token of it.
func serviceAccountToken(t *testing.T, c *testcluster.Cluster, ns, sa string) string {
	t.Helper()
	ctx := context.Background()
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	must(t, err)
	exp := int64(600)
	tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}
