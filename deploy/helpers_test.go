package deploy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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

// keys returns the keys of m, in no order.
func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// operatorContainer returns the first container of the one Deployment in
// objs, and its env: each variable's value ("" when it comes from a
// source).
func operatorContainer(t testing.TB, objs []*unstructured.Unstructured) (container map[string]any, env map[string]string) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(one(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("the Deployment has no containers")
	}
	container = containers[0].(map[string]any)
	env = map[string]string{}
	vars, _ := container["env"].([]any)
	for _, e := range vars {
		e := e.(map[string]any)
		env[e["name"].(string)], _ = e["value"].(string)
	}
	return container, env
}

// webhookService returns the Service hook-operator-webhook in objs, and
// checks that it sends port 443 to the container's port named webhook.
func webhookService(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	svc := named(t, objs, "Service", "hook-operator-webhook")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if p := ports[0].(map[string]any); fmt.Sprint(p["port"]) != "443" || p["targetPort"] != "webhook" {
		t.Errorf("the webhook Service's ports: %v", ports)
	}
	return svc
}

// checkCertificateRole checks the Role hook-operator-webhook-certs in
// objs: in namespace ns, and its second rule limited to the self-signed
// certificate's Secret of that name.
func checkCertificateRole(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	var role rbacv1.Role
	typed(t, named(t, objs, "Role", "hook-operator-webhook-certs"), &role)
	if len(role.Rules) != 2 || !slices.Equal(role.Rules[1].ResourceNames, []string{"hook-operator-webhook-certs"}) || role.Namespace != ns {
		t.Errorf("the certificate Secret's Role: %+v", role)
	}
}
