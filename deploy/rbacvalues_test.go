package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rbaccmd "github.com/hook-operator/hook-operator/internal/cli/rbac"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// valuesHooks writes a hooks folder whose one hook needs a bit of
// everything `rbac` grants: Pods in namespace ns, Memcacheds (a CRD of
// deploy/crds) with a finalizer, ConfigMaps of labelled namespaces, a
// validating binding, a conversion binding and declared writes.
func valuesHooks(t *testing.T, ns string) string {
	t.Helper()
	dir := t.TempDir()
	config := `{"configVersion":"v1",
"kubernetes":[
 {"name":"pods","kind":"Pod","namespace":{"nameSelector":{"matchNames":["` + ns + `"]}}},
 {"name":"memcacheds","apiVersion":"cache.example.com/v1","kind":"Memcached","finalizer":"example.com/cleanup"},
 {"name":"labelled","kind":"ConfigMap","namespace":{"labelSelector":{"matchLabels":{"team":"a"}}}}],
"kubernetesValidating":[{"name":"policy.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}]}],
"kubernetesCustomResourceConversion":[{"name":"memcacheds","crdName":"memcacheds.cache.example.com","conversions":[{"fromVersion":"v1beta1","toVersion":"v1"}]}],
"writes":[{"apiVersion":"apps/v1","kind":"Deployment","verbs":["create","patch"]},
 {"apiVersion":"cache.example.com/v1","kind":"Memcached","subresource":"status","verbs":["update"]}]}`
	script := "#!/usr/bin/env bash\nif [[ \"${1:-}\" == --config ]]; then cat <<'EOF'\n" + config + "\nEOF\nexit 0; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "all.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rbacCommand runs `hook-operator rbac ARGS` and returns what it prints.
func rbacCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, stderr bytes.Buffer
	log := logrus.New()
	log.SetOutput(&stderr)
	cmd := rbaccmd.New(&out, log)
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	cmd.SetArgs(append(args, "--crds", filepath.Join(repoRoot(t), "deploy", "crds")))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("rbac %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.Bytes()
}

// valuesFile writes `rbac -o values` for hooks to a file, for helm's -f.
func valuesFile(t *testing.T, hooks string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, rbacCommand(t, "--hooks-dir", hooks, "-o", "values"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// permission is one verb on one resource, in a namespace ("": cluster-wide),
// of one name ("": any).
type permission struct{ namespace, group, resource, verb, name string }

// permissions lists what rules grant in namespace.
func permissions(namespace string, rules []rbacv1.PolicyRule) []permission {
	var out []permission
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, permission{namespace, g, res, v, n})
					}
				}
			}
		}
	}
	return out
}

// granted lists what the ClusterRoles and Roles of a rendering grant,
// leaving out the metrics-reader ClusterRole (for scrapers).
func granted(t *testing.T, objs []*unstructured.Unstructured) []permission {
	t.Helper()
	var out []permission
	for _, o := range append(only(objs, "ClusterRole"), only(objs, "Role")...) {
		if isMetricsReader(o.GetName()) {
			continue
		}
		var r rbacv1.ClusterRole // a Role has the same fields
		typed(t, o, &r)
		out = append(out, permissions(o.GetNamespace(), r.Rules)...)
	}
	return out
}

// covers reports whether what has grants p: the same verb on the resource,
// cluster-wide or in p's namespace, of any name or of p's.
func covers(have []permission, p permission) bool {
	return slices.ContainsFunc(have, func(h permission) bool {
		return h.group == p.group && h.resource == p.resource && h.verb == p.verb &&
			(h.namespace == "" || h.namespace == p.namespace) && (h.name == "" || h.name == p.name)
	})
}

// From a hooks folder to the chart in one step: the chart rendered with
// `rbac -o values` grants the operator everything that `rbac` (its RBAC
// objects, with start's settings as the chart sets them) grants for the
// hooks, and grants nothing twice in its ClusterRole: what the chart
// grants by itself (Events, the webhook configurations) is not in the
// values again.
func TestHelmRBACValues(t *testing.T) {
	const ns = "ops"
	hooks := valuesHooks(t, "shop")
	// As docs/deploy.md pipes it: rbac -o values | helm ... -f -
	values := rbacCommand(t, "--hooks-dir", hooks, "-o", "values")
	objs := objects(t, run(t, repoRoot(t), values, helm(t), "template", "hook-operator", chart(t), "--namespace", ns,
		"-f", "-", "--set", "webhook.clientCA.configMap=ca"))
	checkRBAC(t, objs, "hook-operator", ns)
	have := granted(t, objs)

	// The chart's settings: the release's name for the webhook
	// configurations and the Lease, self-signed certificates.
	want := objects(t, rbacCommand(t, "--hooks-dir", hooks, "--namespace", ns,
		"--webhook-configuration-name", "hook-operator", "--webhook-configuration-mode", "existing",
		"--webhook-self-signed", "--webhook-cert-secret", "hook-operator-webhook-certs",
		"--leader-elect", "--leader-elect-lease-name", "hook-operator"))
	needed := granted(t, want)
	if len(needed) < 20 {
		t.Fatalf("rbac grants only %v", needed)
	}
	for _, p := range needed {
		if !covers(have, p) {
			t.Errorf("the chart with rbac's values does not grant %+v", p)
		}
	}
	if !slices.Contains(have, permission{"shop", "", "pods", "watch", ""}) || covers(have, permission{"other", "", "pods", "watch", ""}) {
		t.Errorf("want Pods watched in shop only (a Role there): %v", have)
	}

	var role rbacv1.ClusterRole
	typed(t, named(t, objs, "ClusterRole", "hook-operator"), &role)
	seen := map[permission]bool{}
	for _, p := range permissions("", role.Rules) {
		if seen[p] {
			t.Errorf("the ClusterRole grants %+v twice", p)
		}
		seen[p] = true
	}
}

// docs/deploy.md's chart of one's own: hook-operator as a subchart (in
// charts/), the CRDs in crds/ (Helm's convention), and `rbac -o values`
// indented under the subchart's name as the values. Helm renders the CRDs
// (with --include-crds, as install creates them) and the subchart's
// ClusterRole holds the hooks' rules.
func TestHelmChartOfOneOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-operator")
	if err := os.CopyFS(filepath.Join(dir, "charts", "hook-operator"), os.DirFS(chart(t))); err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "crds", "memcacheds.cache.example.com.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := "hook-operator:\n" + strings.ReplaceAll(strings.TrimSuffix(string(rbacCommand(t, "--hooks-dir", valuesHooks(t, "shop"), "-o", "values")), "\n"), "\n", "\n  ") + "\n"
	for name, data := range map[string]string{
		"Chart.yaml":                             "apiVersion: v2\nname: my-operator\nversion: 1.0.0\ndependencies:\n- name: hook-operator\n  version: 0.1.0\n",
		"values.yaml":                            values,
		"crds/memcacheds.cache.example.com.yaml": string(crd),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	objs := objects(t, run(t, dir, nil, helm(t), "template", "ops", dir, "--namespace", "ops", "--include-crds",
		"--set", "hook-operator.webhook.clientCA.configMap=ca"))
	if got := names(only(objs, "CustomResourceDefinition")); !slices.Equal(got, []string{"memcacheds.cache.example.com"}) {
		t.Errorf("CRDs %v, want the one in crds/", got)
	}
	have := granted(t, objs)
	for _, p := range []permission{{"", "cache.example.com", "memcacheds", "watch", ""}, {"", "cache.example.com", "memcacheds/status", "update", ""}, {"shop", "", "pods", "list", ""}} {
		if !covers(have, p) {
			t.Errorf("the subchart does not grant %+v from the nested values", p)
		}
	}
}

// The local cluster's API server accepts the chart rendered with `rbac -o
// values` (server-side dry-run), in a namespace enforcing the restricted
// Pod Security Standard that the hooks also watch Pods in (their Role).
func TestIntegrationHelmRBACValuesServerDryRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	restrict(t, c, ns)
	manifests := helmTemplate(t, ns, "-f", valuesFile(t, valuesHooks(t, ns)), "--set", "webhook.clientCA.configMap=ca")
	objs := objects(t, manifests)
	var roles int
	for _, r := range only(objs, "Role") {
		if r.GetName() == "hook-operator" && r.GetNamespace() == ns {
			roles++
		}
	}
	if roles != 1 {
		t.Fatalf("no Role of rbac.namespaceRules in %s", ns)
	}
	serverDryRun(t, c, manifests, len(objs))
}
