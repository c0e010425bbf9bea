// Package deploy_test checks how hook-operator is packaged and deployed: the
// release's images (hack/release/release.sh: built here, read, and run), the
// kustomize manifests in this folder and the Helm chart in helm/ (rendered,
// checked, and accepted by the local cluster's server-side dry-run).
package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The image's contract, which the manifests must match.
const (
	imageUID    = 65532
	metricsPort = 9115
	// healthPort is --health-listen-address's default: the probes' own
	// listener.
	healthPort = 9116
	// secureMetricsPort is --metrics-secure-address's, on by default.
	secureMetricsPort = 8443
)

// repoRoot returns the repository's root folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs a command in dir and returns its stdout; it fails t with the
// command's stderr when it fails.
func run(t testing.TB, dir string, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	stdout, _ := runIn(t, dir, stdin, name, args...)
	return stdout
}

// runIn is run that also returns stderr.
func runIn(t testing.TB, dir string, stdin []byte, name string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.Bytes(), errOut.Bytes()
}

// objects decodes a stream of YAML documents into objects.
func objects(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// only returns the objects of kind.
func only(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of kind, failing t unless there is exactly one.
func one(t testing.TB, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := only(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want one %s, have %d", kind, len(found))
	}
	return found[0]
}

// typed converts o into the typed object into.
func typed(t testing.TB, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// deployment describes what a rendering is expected to hold besides the
// properties every one must have.
type deployment struct {
	namespace string
	// hooksConfigMap is the ConfigMap mounted at hooksMount, "" for none;
	// rendered says whether the rendering also holds it.
	hooksConfigMap string
	hooksMount     string
	rendered       bool
}

// checkDeployment checks the properties every rendering of hook-operator
// must have: one non-root Deployment with the image's arguments, probes on
// a port of their own, a read-only root with an emptyDir at /tmp, hooks
// mounted with execute mode; a ServiceAccount bound to RBAC without "*";
// a metrics Service; and the secure defaults: /metrics over HTTPS only to
// tokens allowed to get it, and a NetworkPolicy.
func checkDeployment(t *testing.T, objs []*unstructured.Unstructured, want deployment) {
	t.Helper()
	var d appsv1.Deployment
	typed(t, one(t, objs, "Deployment"), &d)
	if d.Namespace != want.namespace {
		t.Errorf("Deployment namespace %q, want %q", d.Namespace, want.namespace)
	}
	// Two replicas, one of which leads (issue 18): a rolling update that
	// keeps one up, the Pod's name as the identity, spread over nodes, a
	// disruption budget, and the Lease in the RBAC.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2 (one leads, one stands by)", d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0", d.Spec.Strategy)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if env["HOOK_OPERATOR_LEADER_ELECT"].Value != "true" {
		t.Errorf("HOOK_OPERATOR_LEADER_ELECT is %q, want true", env["HOOK_OPERATOR_LEADER_ELECT"].Value)
	}
	for name, field := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid"} {
		if v := env[name].ValueFrom; v == nil || v.FieldRef == nil || v.FieldRef.FieldPath != field {
			t.Errorf("%s is not the downward API's %s", name, field)
		}
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("affinity %+v, want the replicas preferably on different nodes", pod.Affinity)
	}
	var pdb policyv1.PodDisruptionBudget
	typed(t, one(t, objs, "PodDisruptionBudget"), &pdb)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Namespace != want.namespace {
		t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 in %s", pdb.Spec, want.namespace)
	}
	leaseRole := false
	for _, o := range only(objs, "Role") {
		var r rbacv1.Role
		typed(t, o, &r)
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "leases") && slices.Contains(rule.Verbs, "update") && len(rule.ResourceNames) == 1 && r.Namespace == want.namespace {
				leaseRole = true
			}
		}
	}
	if !leaseRole {
		t.Errorf("no Role in %s lets the operator update its Lease by name", want.namespace)
	}

	// Non-root, read-only, nothing extra.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatalf("Pod or container securityContext missing: %v, %v", psc, sc)
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("runAsNonRoot is not true")
	}
	if psc.RunAsUser == nil || *psc.RunAsUser != imageUID {
		t.Errorf("runAsUser %v, want the image's user %d", psc.RunAsUser, imageUID)
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile %v, want RuntimeDefault", psc.SeccompProfile)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %v, want drop [ALL] and no add", sc.Capabilities)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}

	// The image's default command line; the hooks folder is /hooks.
	if len(c.Command) > 0 {
		t.Errorf("command %v replaces the image's entrypoint (tini)", c.Command)
	}
	if !slices.Equal(c.Args[:min(5, len(c.Args))], []string{"start", "--hooks-dir", "/hooks", "--tmp-dir", "/tmp"}) {
		t.Errorf("args %v, want start --hooks-dir /hooks --tmp-dir /tmp first", c.Args)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %v: want CPU and memory requests and a memory limit", c.Resources)
	}

	// Probes on their own listener (health), which no load on the
	// metrics port delays (issue 43).
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if len(c.Ports) != 3 || ports["metrics"] != metricsPort || ports["health"] != healthPort || ports["https-metrics"] != secureMetricsPort {
		t.Errorf("ports %v, want metrics %d, health %d and https-metrics %d", c.Ports, metricsPort, healthPort, secureMetricsPort)
	}
	probe := func(what string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing", what)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "health" {
			t.Errorf("%s probe %s on %s, want %s on health", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")

	// Volumes: /tmp writable, hooks executable.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts["/tmp"]; !ok || volumes[m.Name].EmptyDir == nil {
		t.Errorf("/tmp is not an emptyDir (mounts %v)", c.VolumeMounts)
	}
	var hooksVolumes []string
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		if v.ConfigMap == nil {
			continue
		}
		hooksVolumes = append(hooksVolumes, v.ConfigMap.Name)
		if m.MountPath != want.hooksMount {
			t.Errorf("ConfigMap %s mounted at %s, want %s", v.ConfigMap.Name, m.MountPath, want.hooksMount)
		}
		if !m.ReadOnly {
			t.Errorf("hooks mount %s is writable", m.MountPath)
		}
		if v.ConfigMap.DefaultMode == nil || *v.ConfigMap.DefaultMode != 0o555 {
			t.Errorf("hooks ConfigMap defaultMode %v, want 0555 (365): hooks must be executable", v.ConfigMap.DefaultMode)
		}
	}
	switch {
	case want.hooksConfigMap == "" && len(hooksVolumes) > 0:
		t.Errorf("hooks mounted from %v, want none", hooksVolumes)
	case want.hooksConfigMap != "" && !slices.Equal(hooksVolumes, []string{want.hooksConfigMap}):
		t.Errorf("hooks mounted from %v, want ConfigMap %s", hooksVolumes, want.hooksConfigMap)
	}
	if want.rendered {
		var cm corev1.ConfigMap
		for _, o := range only(objs, "ConfigMap") {
			if o.GetName() == want.hooksConfigMap {
				typed(t, o, &cm)
			}
		}
		if len(cm.Data) == 0 {
			t.Errorf("ConfigMap %s is not rendered or holds no hooks", want.hooksConfigMap)
		}
		for name, script := range cm.Data {
			if !strings.HasPrefix(script, "#!") {
				t.Errorf("hook %s in ConfigMap %s does not start with #!", name, want.hooksConfigMap)
			}
		}
	}

	checkRBAC(t, objs, pod.ServiceAccountName, d.Namespace)
	checkService(t, objs, d)
	checkSecure(t, objs, pod.ServiceAccountName)
	checkNetworkPolicy(t, objs, d)
}

// checkNetworkPolicy checks the default NetworkPolicy: on the Deployment's
// Pods, ingress only; the webhook port (where there is one) and the probe
// port from any source; the metrics ports only from the namespace
// monitoring; no other port.
func checkNetworkPolicy(t *testing.T, objs []*unstructured.Unstructured, d appsv1.Deployment) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	typed(t, one(t, objs, "NetworkPolicy"), &np)
	if np.Namespace != d.Namespace {
		t.Errorf("the NetworkPolicy is in %q, the Deployment in %q", np.Namespace, d.Namespace)
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s; the Pods have %v", k, v, d.Spec.Template.Labels)
		}
	}
	if len(np.Spec.PodSelector.MatchLabels) == 0 || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("the NetworkPolicy: podSelector %v, policyTypes %v; want the Pods' labels, Ingress", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	// Ports are named (the chart) or numbered (deploy/).
	numbers := map[string]string{"metrics": "9115", "https-metrics": "8443", "health": "9116", "webhook": "9680"}
	from := map[string][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			name := p.Port.String()
			for n, number := range numbers {
				if name == number {
					name = n
				}
			}
			if _, dup := from[name]; dup {
				t.Errorf("port %s in two rules", name)
			}
			from[name] = rule.From
		}
	}
	for name, peers := range from {
		switch name {
		case "webhook", "health":
			if len(peers) != 0 {
				t.Errorf("the %s port is admitted from %v only, want any source (the API server's and the kubelet's addresses depend on the cluster)", name, peers)
			}
		case "metrics", "https-metrics":
			if len(peers) != 1 || peers[0].NamespaceSelector == nil || peers[0].PodSelector != nil ||
				peers[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
				t.Errorf("the %s port is admitted from %+v, want the namespace monitoring only", name, peers)
			}
		default:
			t.Errorf("the NetworkPolicy admits port %s, which is not the operator's", name)
		}
	}
	for _, name := range []string{"metrics", "https-metrics", "health"} {
		if _, ok := from[name]; !ok {
			t.Errorf("the NetworkPolicy closes the %s port", name)
		}
	}
}

// checkRBAC checks that the ServiceAccount exists, that every binding binds
// it to a role in the rendering, and that no rule uses "*".
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured, serviceAccount, namespace string) {
	t.Helper()
	sa := one(t, objs, "ServiceAccount")
	if sa.GetName() != serviceAccount || sa.GetNamespace() != namespace {
		t.Errorf("ServiceAccount %s/%s, want the Deployment's %s/%s", sa.GetNamespace(), sa.GetName(), namespace, serviceAccount)
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range append(only(objs, "ClusterRole"), only(objs, "Role")...) {
		var r rbacv1.ClusterRole // a Role has the same fields
		typed(t, o, &r)
		roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = r.Rules
		if len(r.Rules) == 0 {
			t.Errorf("%s %s has no rules", o.GetKind(), o.GetName())
		}
		for i, rule := range r.Rules {
			for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
				if slices.Contains(list, "*") {
					t.Errorf("%s %s rule %d grants *: %+v", o.GetKind(), o.GetName(), i, rule)
				}
			}
		}
	}
	// The metrics-reader ClusterRole is for scrapers, not the operator:
	// it may be unbound, and its binding names a scraper.
	events := 0
	for _, o := range only(objs, "ClusterRole") {
		if isMetricsReader(o.GetName()) {
			continue
		}
		var r rbacv1.ClusterRole
		typed(t, o, &r)
		if slices.ContainsFunc(r.Rules, func(rule rbacv1.PolicyRule) bool { return slices.Contains(rule.Resources, "events") }) {
			events++
		}
	}
	if events != 1 {
		t.Errorf("%d ClusterRoles grant Events, want 1 (at least the Events about failed runs are cluster-wide)", events)
	}
	bindings := append(only(objs, "ClusterRoleBinding"), only(objs, "RoleBinding")...)
	operatorRoles, operatorBindings := 0, 0
	for key := range roles {
		if !isMetricsReader(key) {
			operatorRoles++
		}
	}
	for _, o := range bindings {
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		typed(t, o, &b)
		ns := ""
		if b.RoleRef.Kind == "Role" {
			ns = o.GetNamespace()
		}
		if _, ok := roles[b.RoleRef.Kind+"/"+ns+"/"+b.RoleRef.Name]; !ok {
			t.Errorf("%s %s refers to %s %s, which is not rendered", o.GetKind(), o.GetName(), b.RoleRef.Kind, b.RoleRef.Name)
		}
		if isMetricsReader(b.RoleRef.Name) {
			continue
		}
		operatorBindings++
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: namespace}}
		if !slices.Equal(b.Subjects, want) {
			t.Errorf("%s %s binds %v, want the operator's ServiceAccount %s/%s", o.GetKind(), o.GetName(), b.Subjects, namespace, serviceAccount)
		}
	}
	if operatorBindings != operatorRoles {
		t.Errorf("%d bindings for %d roles of the operator", operatorBindings, operatorRoles)
	}
}

// isMetricsReader reports whether a role's name (or key) is the
// ClusterRole of who may read --metrics-secure's /metrics.
func isMetricsReader(name string) bool { return strings.HasSuffix(name, "-metrics-reader") }

// checkService checks the metrics Service: the metrics ports, the
// Deployment's Pods, Prometheus' scrape annotations pointed at the HTTPS
// port that serves /metrics.
func checkService(t *testing.T, objs []*unstructured.Unstructured, d appsv1.Deployment) {
	t.Helper()
	var s corev1.Service
	typed(t, one(t, objs, "Service"), &s)
	ports := map[string]int32{}
	for _, p := range s.Spec.Ports {
		ports[p.TargetPort.String()] = p.Port
	}
	if len(s.Spec.Ports) != 2 || ports["metrics"] != metricsPort || ports["https-metrics"] != secureMetricsPort {
		t.Errorf("Service ports %v, want %d to metrics and %d to https-metrics", s.Spec.Ports, metricsPort, secureMetricsPort)
	}
	for k, v := range s.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, which the Pods do not have", k, v)
		}
	}
	a := s.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "8443" || a["prometheus.io/scheme"] != "https" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("Service annotations %v, want Prometheus' scrape, port 8443, scheme https and path", a)
	}
}

// crdNames returns the names of the CRDs in deploy/crds.
func crdNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crds: %v", err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objects(t, data) {
			if o.GetKind() == "CustomResourceDefinition" { // not the folder's kustomization.yaml
				names = append(names, o.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}

// names returns the sorted names of objs.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}
