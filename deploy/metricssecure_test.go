package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// secureRules are what --metrics-secure needs of the API server.
var secureRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// checkSecure checks a rendering with --metrics-secure on: the setting and
// the https-metrics port on the container and the Service, the reviews
// granted to the operator's ServiceAccount, and a metrics-reader
// ClusterRole for the metrics paths.
func checkSecure(t *testing.T, objs []*unstructured.Unstructured, serviceAccount string) {
	t.Helper()
	container, env := operatorContainer(t, objs)
	if env["HOOK_OPERATOR_METRICS_SECURE"] != "true" || env["HOOK_OPERATOR_METRICS_SECURE_ADDRESS"] != ":8443" {
		t.Errorf("the container's settings: %v, want HOOK_OPERATOR_METRICS_SECURE=true on :8443", env)
	}
	hasPort := func(ports []any, key string) bool {
		for _, p := range ports {
			if p := p.(map[string]any); p["name"] == "https-metrics" && fmt.Sprint(p[key]) == "8443" {
				return true
			}
		}
		return false
	}
	if !hasPort(container["ports"].([]any), "containerPort") {
		t.Errorf("the container's ports lack https-metrics 8443: %v", container["ports"])
	}
	var svcPort bool
	for _, s := range only(objs, "Service") {
		ports, _, _ := unstructured.NestedSlice(s.Object, "spec", "ports")
		svcPort = svcPort || hasPort(ports, "port")
	}
	if !svcPort {
		t.Error("no Service port https-metrics 8443")
	}
	var reviews, reader bool
	roles := map[string]rbacv1.ClusterRole{}
	for _, o := range only(objs, "ClusterRole") {
		var role rbacv1.ClusterRole
		typed(t, o, &role)
		roles[role.Name] = role
		if slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Equal(r.NonResourceURLs, []string{"/metrics", "/metrics/hooks"}) && slices.Equal(r.Verbs, []string{"get"})
		}) {
			reader = true
		}
	}
	for _, o := range only(objs, "ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		typed(t, o, &b)
		role := roles[b.RoleRef.Name]
		if len(b.Subjects) == 1 && b.Subjects[0].Name == serviceAccount &&
			slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, secureRules[0]) }) &&
			slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, secureRules[1]) }) {
			reviews = true
		}
	}
	if !reviews {
		t.Errorf("no ClusterRole bound to %s grants %v", serviceAccount, secureRules)
	}
	if !reader {
		t.Error("no metrics-reader ClusterRole with nonResourceURLs [/metrics, /metrics/hooks], verbs [get]")
	}
}

// deploy/ serves /metrics securely by default (its component
// metrics-secure: TestKustomize checks the result); the patches
// docs/deploy.md gives turn it and the NetworkPolicy off in an overlay.
func TestKustomizeSecureDefaultsTurnedOff(t *testing.T) {
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The overlay of docs/deploy.md's "Turning the defaults off", with
	// this checkout's deploy/ as its base.
	doc := string(data)
	const start, end = "# my-overlay/kustomization.yaml: the defaults turned off\n", "```"
	i := strings.Index(doc, start)
	if i < 0 {
		t.Fatalf("docs/deploy.md lacks the overlay %q", start)
	}
	kustomization := doc[i+len(start):]
	kustomization = kustomization[:strings.Index(kustomization, end)]
	kustomization = strings.Replace(kustomization, "- ../deploy\n", "- "+base+"\n", 1)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := kustomize(t, overlay)
	if np := only(objs, "NetworkPolicy"); len(np) != 0 {
		t.Errorf("the NetworkPolicy is still there: %v", names(np))
	}
	env, _ := containerEnv(t, objs)
	if env["HOOK_OPERATOR_METRICS_SECURE"] != "false" {
		t.Errorf("HOOK_OPERATOR_METRICS_SECURE=%q, want false", env["HOOK_OPERATOR_METRICS_SECURE"])
	}
	svc := one(t, objs, "Service")
	if a := svc.GetAnnotations(); a["prometheus.io/port"] != "9115" || a["prometheus.io/scheme"] != "http" {
		t.Errorf("the Service's scrape annotations %v, want port 9115 over http", a)
	}
}

// The chart's metrics.secure.enabled (on by default) does the same, and its
// monitors then scrape over HTTPS as deploy/monitoring/servicemonitor-secure.yaml
// does.
func TestHelmTemplateMetricsSecure(t *testing.T) {
	objs := objects(t, helmTemplate(t, "hook-operator",
		"--set", "monitoring.serviceMonitor.enabled=true",
		"--set-json", `metrics.secure.readerSubjects=[{"kind":"ServiceAccount","name":"prom","namespace":"mon"}]`))
	checkSecure(t, objs, "hook-operator")
	var kitSM unstructured.Unstructured
	data, err := os.ReadFile(filepath.Join(monitoringDir(t), "servicemonitor-secure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kitSM.Object); err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedSlice(one(t, objs, "ServiceMonitor").Object, "spec", "endpoints")
	want, _, _ := unstructured.NestedSlice(kitSM.Object, "spec", "endpoints")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the chart's secure ServiceMonitor endpoints %v, want deploy/monitoring/servicemonitor-secure.yaml's %v", got, want)
	}
	var bound bool
	for _, o := range only(objs, "ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		typed(t, o, &b)
		if b.RoleRef.Name == "hook-operator-metrics-reader" && len(b.Subjects) == 1 && b.Subjects[0].Name == "prom" {
			bound = true
		}
	}
	if !bound {
		t.Error("metrics.secure.readerSubjects is not bound to the metrics-reader ClusterRole")
	}
	// Turned off: none of it, and /metrics on the plain port, where the
	// Service's scrape annotations point.
	objs = objects(t, helmTemplate(t, "hook-operator", "--set", "metrics.secure.enabled=false"))
	for _, o := range objs {
		if o.GetName() == "hook-operator-metrics-reader" {
			t.Errorf("%s %s rendered with metrics.secure.enabled=false", o.GetKind(), o.GetName())
		}
	}
	env, _ := containerEnv(t, objs)
	if _, ok := env["HOOK_OPERATOR_METRICS_SECURE"]; ok {
		t.Errorf("HOOK_OPERATOR_METRICS_SECURE set with metrics.secure.enabled=false: %v", env)
	}
	if a := one(t, objs, "Service").GetAnnotations(); a["prometheus.io/port"] != "9115" || a["prometheus.io/scheme"] != "" {
		t.Errorf("the Service's scrape annotations %v, want port 9115 over plain HTTP", a)
	}
}
