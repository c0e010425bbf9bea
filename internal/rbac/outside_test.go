package rbac_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

func parseOps(t *testing.T, file string) []ops.Operation {
	t.Helper()
	operations, err := ops.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return operations
}

// outside checks the operations of file against the writes of config and
// returns each Outside as "index reason kind namespace verbs".
func outside(t *testing.T, config, file string) []string {
	t.Helper()
	h := parse(t, "h.sh", "configVersion: v1\n"+config)
	w := rbac.NewWrites(h.Config.Writes, kube.NewStaticResolver(kube.BuiltinResources())).WithReads(h.Config.Kubernetes)
	var out []string
	for _, o := range w.Check(parseOps(t, file)) {
		a := o.Access
		kind := strings.TrimSpace(a.APIVersion + " " + a.Kind)
		if a.Subresource != "" {
			kind += "/" + a.Subresource
		}
		out = append(out, strings.Join([]string{string(rune('0' + o.Index)), o.Reason, kind, a.Namespace, strings.Join(a.Verbs, ",")}, " "))
	}
	return out
}

func TestWritesCheck(t *testing.T) {
	const writes = `writes:
- {kind: cm, verbs: [create, patch], namespaces: [shop]}
- {kind: ConfigMap, verbs: [get, update], namespaces: [shop]}
- {apiVersion: apps/v1, kind: deployments, subresource: scale, verbs: [patch]}
- {kind: Namespace, verbs: [create], namespaces: [ignored]}
`
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"declared, verbs from two writes, short and plural names",
			`{"operation": "CreateOrUpdate", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "shop"}}}
{"operation": "MergePatch", "kind": "configmaps", "namespace": "shop", "name": "a", "mergePatch": {}}
{"operation": "MergePatch", "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "any", "name": "d", "subresource": "scale", "mergePatch": {}}
{"operation": "Requeue", "namespace": "x", "name": "y", "after": "1s"}`, nil},
		{"a kind not declared", `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"}}}`,
			[]string{"0 kind v1 Secret shop create"}},
		{"another namespace", `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "kube-system"}}}`,
			[]string{"0 namespace v1 ConfigMap kube-system create"}},
		{"a verb not declared", `{"operation": "Delete", "kind": "ConfigMap", "namespace": "shop", "name": "a"}`,
			[]string{"0 verb v1 ConfigMap shop delete"}},
		{"the object, not its declared subresource", `{"operation": "MergePatch", "kind": "Deployment", "namespace": "x", "name": "d", "mergePatch": {}}`,
			[]string{"0 kind apps/v1 Deployment x patch"}},
		{"a subresource not declared", `{"operation": "Status", "kind": "ConfigMap", "namespace": "shop", "name": "a", "status": {}}`,
			[]string{"0 kind v1 ConfigMap/status shop get,update"}},
		{"another group of the kind's name", `{"operation": "MergePatch", "apiVersion": "extensions.example.com/v1", "kind": "Deployment", "namespace": "x", "name": "d", "subresource": "scale", "mergePatch": {}}`,
			[]string{"0 kind extensions.example.com/v1 Deployment/scale x patch"}},
		{"a cluster-scoped kind ignores namespaces", `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}}`, nil},
		{"ApplySet: its parent and each object",
			`{"operation": "ApplySet", "name": "s", "parent": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "p"},
			  "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "shop"}},
			              {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop"}}]}`,
			[]string{"0 verb v1 ConfigMap shop list,delete", "0 kind v1 Secret shop create,patch,list,delete"}},
		{"Apply: its parent read", `{"operation": "Apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "shop"}},
			"parent": {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "p"}}`,
			[]string{"0 kind v1 Pod shop get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outside(t, writes, tc.file)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A kind whose CRD is not served yet (an earlier operation creates it) is
// matched by its name, in the group its apiVersion names.
func TestWritesCheckUnservedKind(t *testing.T) {
	const writes = "writes:\n- {apiVersion: example.com/v1, kind: Memcached, verbs: [create], namespaces: [shop]}\n"
	mk := func(apiVersion, ns string) string {
		return `{"operation": "Create", "object": {"apiVersion": "` + apiVersion + `", "kind": "Memcached", "metadata": {"name": "m", "namespace": "` + ns + `"}}}`
	}
	if got := outside(t, writes, mk("example.com/v1", "shop")); got != nil {
		t.Errorf("declared: got %q", got)
	}
	if got := outside(t, writes, mk("example.com/v1", "web")); !slices.Equal(got, []string{"0 namespace example.com/v1 Memcached web create"}) {
		t.Errorf("another namespace: got %q", got)
	}
	if got := outside(t, writes, mk("other.com/v1", "shop")); !slices.Equal(got, []string{"0 kind other.com/v1 Memcached shop create"}) {
		t.Errorf("another group: got %q", got)
	}
}

// What a hook's bindings watch it may read, as `hook-operator rbac` grants
// it: an Apply's parent of a watched kind is not outside, in the
// binding's namespaces; elsewhere it is. Without declared writes, the
// reads do not make the hook one that declares some.
func TestWritesCheckBindingReads(t *testing.T) {
	const config = `kubernetes:
- {name: pods, apiVersion: v1, kind: Pod, namespace: {nameSelector: {matchNames: [shop]}}}
- {name: dbs, apiVersion: example.com/v1, kind: Memcached}
`
	apply := func(kind, apiVersion, ns string) string {
		return `{"operation": "Apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "` + ns + `"}},
"parent": {"apiVersion": "` + apiVersion + `", "kind": "` + kind + `", "namespace": "` + ns + `", "name": "p"}}`
	}
	const writes = "writes:\n- {kind: ConfigMap, verbs: [patch]}\n"
	for _, tc := range []struct {
		name, config, file string
		want               []string
	}{
		{"a watched parent", config + writes, apply("Pod", "v1", "shop"), nil},
		{"a watched custom parent, any namespace", config + writes, apply("Memcached", "example.com/v1", "web"), nil},
		{"a watched parent in another namespace", config + writes, apply("Pod", "v1", "web"), []string{"0 namespace v1 Pod web get"}},
		{"a parent not watched", writes, apply("Pod", "v1", "shop"), []string{"0 kind v1 Pod shop get"}},
		{"no declared writes", config, apply("Pod", "v1", "shop"), []string{"0 no_writes v1 ConfigMap shop patch", "0 no_writes v1 Pod shop get"}},
	} {
		if got := outside(t, tc.config, tc.file); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Without declared writes, every operation that needs a verb is outside;
// Requeue needs none.
func TestWritesCheckNoWrites(t *testing.T) {
	got := outside(t, "", `{"operation": "Requeue", "namespace": "x", "name": "y", "after": "1s"}
{"operation": "DeleteInBackground", "kind": "Pod", "namespace": "x", "name": "y"}`)
	if !slices.Equal(got, []string{"1 no_writes v1 Pod x delete"}) {
		t.Errorf("got %q", got)
	}
}

func TestOutsideError(t *testing.T) {
	h := parse(t, "h.sh", "configVersion: v1\nwrites:\n- {kind: ConfigMap, verbs: [create], namespaces: [shop]}\n")
	w := rbac.NewWrites(h.Config.Writes, kube.NewStaticResolver(kube.BuiltinResources()))
	got := w.Check(parseOps(t, `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "web"}}}`))
	if len(got) != 1 {
		t.Fatalf("got %v", got)
	}
	want := "operation 0 (Create v1/Secret web/s): needs create on v1 Secret in namespace web, a kind the hook does not declare"
	if got[0].Error() != want {
		t.Errorf("got  %s\nwant %s", got[0].Error(), want)
	}
	if d := rbac.Describe(h.Config.Writes); d != "ConfigMap (create) in shop" {
		t.Errorf("Describe: %s", d)
	}
}

// docs/bindings.md's table of the verbs each operation needs lists, in its
// verbs column, exactly the verbs AccessOf gives.
func TestAccessAsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/bindings.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "| operation | verbs | and sometimes |")
	if start < 0 {
		t.Fatal("docs/bindings.md has no table of the verbs each operation needs")
	}
	table := doc[start:]
	table = table[:strings.Index(table, "\n\n")]
	samples := map[string]string{
		ops.Create:             `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}}`,
		ops.CreateIfNotExists:  `{"operation": "CreateIfNotExists", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}}`,
		ops.CreateOrUpdate:     `{"operation": "CreateOrUpdate", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}}`,
		ops.Delete:             `{"operation": "Delete", "kind": "ConfigMap", "namespace": "n", "name": "a"}`,
		ops.DeleteInBackground: `{"operation": "DeleteInBackground", "kind": "ConfigMap", "namespace": "n", "name": "a"}`,
		ops.DeleteNonCascading: `{"operation": "DeleteNonCascading", "kind": "ConfigMap", "namespace": "n", "name": "a"}`,
		ops.MergePatch:         `{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "n", "name": "a", "mergePatch": {}}`,
		ops.JSONPatch:          `{"operation": "JSONPatch", "kind": "ConfigMap", "namespace": "n", "name": "a", "jsonPatch": []}`,
		ops.JQPatch:            `{"operation": "JQPatch", "kind": "ConfigMap", "namespace": "n", "name": "a", "jqFilter": "."}`,
		ops.Apply:              `{"operation": "Apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}, "parent": {"apiVersion": "v1", "kind": "Pod", "namespace": "n", "name": "p"}}`,
		ops.ApplySet:           `{"operation": "ApplySet", "name": "s", "parent": {"apiVersion": "v1", "kind": "Pod", "namespace": "n", "name": "p"}, "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}]}`,
		ops.Status:             `{"operation": "Status", "kind": "ConfigMap", "namespace": "n", "name": "a", "status": {}}`,
		ops.Requeue:            `{"operation": "Requeue", "namespace": "n", "name": "a", "after": "1s"}`,
	}
	backticked := regexp.MustCompile("`([a-zA-Z]+)`")
	for _, typ := range ops.Types {
		var row string
		for _, line := range strings.Split(table, "\n") {
			if cells := strings.Split(line, "|"); len(cells) > 3 && strings.Contains(cells[1], "`"+typ+"`") {
				row = cells[2]
			}
		}
		if row == "" {
			t.Errorf("%s: no row in docs/bindings.md's table", typ)
			continue
		}
		var documented []string
		for _, m := range backticked.FindAllStringSubmatch(row, -1) {
			if slices.Contains(hook.Verbs, m[1]) && !slices.Contains(documented, m[1]) {
				documented = append(documented, m[1])
			}
		}
		var got []string
		for _, a := range rbac.AccessOf(parseOps(t, samples[typ])[0]) {
			for _, v := range a.Verbs {
				if !slices.Contains(got, v) {
					got = append(got, v)
				}
			}
		}
		slices.Sort(documented)
		slices.Sort(got)
		if !slices.Equal(documented, got) {
			t.Errorf("%s: docs/bindings.md lists %v, AccessOf gives %v", typ, documented, got)
		}
	}
}
