package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/applyset"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// applySetFile is an ApplySet of the ConfigMap parent with objects, each
// "cm/name/value" (a ConfigMap with data v: value) or "secret/name".
func applySetFile(set, parent string, objects ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "operation: ApplySet\nname: %s\nparent: {kind: ConfigMap, namespace: %%NS%%, name: %s}\nobjects:", set, parent)
	if len(objects) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, o := range objects {
		parts := strings.Split(o, "/")
		switch parts[0] {
		case "cm":
			fmt.Fprintf(&b, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %%NS%%}, data: {v: %q}}\n", parts[1], parts[2])
		case "secret":
			fmt.Fprintf(&b, "- {apiVersion: v1, kind: Secret, metadata: {name: %s, namespace: %%NS%%}, stringData: {v: x}}\n", parts[1])
		}
	}
	return b.String()
}

// exist returns which of the named objects exist.
func (e *env) exist(gvr schema.GroupVersionResource, names ...string) string {
	e.t.Helper()
	var out []string
	for _, n := range names {
		if e.get(gvr, n) != nil {
			out = append(out, n)
		}
	}
	return strings.Join(out, " ")
}

func (e *env) inventory(parent *unstructured.Unstructured, id string) (string, bool) {
	e.t.Helper()
	v, ok := e.mustGet(configMaps, parent.GetName()).GetAnnotations()[applyset.InventoryAnnotation(id)]
	return v, ok
}

func TestIntegrationApplySet(t *testing.T) {
	e := newEnv(t)
	const hook = "db/sampledb.sh"
	parent := e.configMap("db", nil)
	id := applyset.ID(hook, "children", parent.GetUID())
	// Not in the set: no label, or another set's.
	e.configMap("bystander", map[string]any{"v": "keep"})
	e.create(secrets, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "bystander"}})
	e.create(configMaps, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "other-set", "labels": map[string]any{applyset.Label: applyset.ID(hook, "others", parent.GetUID())},
	}})

	// First run: children of two kinds.
	e.mustApplyFor(hook, applySetFile("children", "db", "cm/config/1", "cm/extra/1", "secret/password"))
	for _, c := range []*unstructured.Unstructured{e.mustGet(configMaps, "config"), e.mustGet(configMaps, "extra"), e.mustGet(secrets, "password")} {
		if c.GetLabels()[applyset.Label] != id {
			t.Errorf("%s %s: labels %v, want %s=%s", c.GetKind(), c.GetName(), c.GetLabels(), applyset.Label, id)
		}
		refs := c.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != parent.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s %s: ownerReferences %v", c.GetKind(), c.GetName(), refs)
		}
	}
	if inv, _ := e.inventory(parent, id); inv != "v1/ConfigMap,v1/Secret" {
		t.Errorf("inventory = %q", inv)
	}

	// Second run: one child changed, one of each kind removed.
	e.mustApplyFor(hook, applySetFile("children", "db", "cm/config/2"))
	if got := e.exist(configMaps, "config", "extra"); got != "config" {
		t.Errorf("ConfigMaps after the second run: %s, want config", got)
	}
	if got := nested(e.mustGet(configMaps, "config"), "data", "v"); got != "2" {
		t.Errorf("config not updated: v = %v", got)
	}
	if e.get(secrets, "password") != nil {
		t.Error("the removed Secret still exists")
	}
	if inv, _ := e.inventory(parent, id); inv != "v1/ConfigMap" {
		t.Errorf("inventory = %q", inv)
	}

	// An operator restart: a new Applier, with nothing in memory, prunes
	// the ConfigMaps although the run has none; only the inventory in the
	// cluster knows that the set has ConfigMaps.
	clients, err := kube.NewClients(e.c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e.a = &Applier{Dynamic: e.c.Dynamic, Resolver: clients.Resolver}
	e.mustApplyFor(hook, applySetFile("children", "db", "secret/password2"))
	if e.get(configMaps, "config") != nil {
		t.Error("the new Applier did not prune the ConfigMap that only the inventory knew of")
	}
	if inv, _ := e.inventory(parent, id); inv != "v1/Secret" {
		t.Errorf("inventory = %q", inv)
	}

	// An empty set prunes everything, and the inventory goes.
	e.mustApplyFor(hook, applySetFile("children", "db"))
	if e.get(secrets, "password2") != nil {
		t.Error("an empty set did not prune the Secret")
	}
	if inv, ok := e.inventory(parent, id); ok {
		t.Errorf("inventory annotation left: %q", inv)
	}
	// Repeating is harmless.
	e.mustApplyFor(hook, applySetFile("children", "db"))

	if got := e.exist(configMaps, "db", "bystander", "other-set"); got != "db bystander other-set" {
		t.Errorf("ConfigMaps outside the set: only %q left", got)
	}
	if e.get(secrets, "bystander") == nil {
		t.Error("the unlabelled Secret was deleted")
	}
}

// A set whose last run stopped after writing its objects and before
// pruning (a crash, an error) is completed by the next run: the inventory
// was written first.
func TestIntegrationApplySetAfterACrash(t *testing.T) {
	e := newEnv(t)
	parent := e.configMap("db", nil)
	id := applyset.ID("h.sh", "s", parent.GetUID())
	// What a crashed run left: the inventory lists Secrets, and a Secret
	// of the set exists; the next run has only ConfigMaps.
	_, err := e.c.Dynamic.Resource(configMaps).Namespace(e.ns).Patch(context.Background(), "db", "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"v1/Secret"}}}`, applyset.InventoryAnnotation(id))), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.create(secrets, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{
		"name": "left-over", "labels": map[string]any{applyset.Label: id},
	}})
	e.mustApplyFor("h.sh", applySetFile("s", "db", "cm/a/1"))
	if e.get(secrets, "left-over") != nil {
		t.Error("the Secret the inventory listed was not pruned")
	}
	if inv, _ := e.inventory(parent, id); inv != "v1/ConfigMap" {
		t.Errorf("inventory = %q", inv)
	}
}

func TestIntegrationApplySetsDoNotPruneEachOther(t *testing.T) {
	e := newEnv(t)
	p1 := e.configMap("p1", nil)
	e.configMap("p2", nil)

	e.mustApplyFor("h.sh", applySetFile("a", "p1", "cm/a1/1"))
	e.mustApplyFor("h.sh", applySetFile("b", "p1", "cm/b1/1"))
	e.mustApplyFor("other.sh", applySetFile("a", "p1", "cm/o1/1"))
	e.mustApplyFor("h.sh", applySetFile("a", "p2", "cm/p2a/1"))
	if got := e.exist(configMaps, "a1", "b1", "o1", "p2a"); got != "a1 b1 o1 p2a" {
		t.Fatalf("applied: %s", got)
	}

	// Set a of p1 by h.sh becomes empty: set b, the other hook's set a and
	// the other parent's set a keep their objects.
	e.mustApplyFor("h.sh", applySetFile("a", "p1"))
	if got := e.exist(configMaps, "a1", "b1", "o1", "p2a"); got != "b1 o1 p2a" {
		t.Errorf("after emptying one set: %s, want b1 o1 p2a", got)
	}
	annotations := e.mustGet(configMaps, "p1").GetAnnotations()
	if _, ok := annotations[applyset.InventoryAnnotation(applyset.ID("h.sh", "a", p1.GetUID()))]; ok {
		t.Error("the emptied set's inventory is left")
	}
	for _, id := range []string{applyset.ID("h.sh", "b", p1.GetUID()), applyset.ID("other.sh", "a", p1.GetUID())} {
		if annotations[applyset.InventoryAnnotation(id)] != "v1/ConfigMap" {
			t.Errorf("inventory of %s = %q", id, annotations[applyset.InventoryAnnotation(id)])
		}
	}
}

func TestIntegrationApplySetOptions(t *testing.T) {
	e := newEnv(t)
	e.configMap("db", nil)

	t.Run("owner: false", func(t *testing.T) {
		e.mustApplyFor("h.sh", "owner: false\n"+applySetFile("free", "db", "cm/free/1"))
		got := e.mustGet(configMaps, "free")
		if refs := got.GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("ownerReferences %v with owner: false", refs)
		}
		if got.GetLabels()[applyset.Label] == "" {
			t.Error("not labelled")
		}
		e.mustApplyFor("h.sh", "owner: false\n"+applySetFile("free", "db"))
		if e.get(configMaps, "free") != nil {
			t.Error("not pruned")
		}
	})

	t.Run("force", func(t *testing.T) {
		e.mustApplyFor("h.sh", applySetFile("forced", "db", "cm/contested/1"))
		e.serverSideApply("someone-else", configMaps, map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "contested"}, "data": map[string]any{"v": "theirs"},
		})
		err := e.applyFor("h.sh", applySetFile("forced", "db", "cm/contested/2"))
		wantErr(t, err, fmt.Sprintf("objects[0] (v1/ConfigMap %s/contested): conflict", e.ns), `.data.v (owned by "someone-else"`, "set force: true")
		e.mustApplyFor("h.sh", "force: true\n"+applySetFile("forced", "db", "cm/contested/2"))
		if v := nested(e.mustGet(configMaps, "contested"), "data", "v"); v != "2" {
			t.Errorf("v = %v after force", v)
		}
	})

	t.Run("missing parent", func(t *testing.T) {
		// Skipped: the set's objects would be garbage-collected at once.
		if err := e.applyFor("h.sh", applySetFile("s", "no-such-parent", "cm/orphan/1")); err != nil {
			t.Errorf("an ApplySet whose parent is gone failed: %v", err)
		}
		if e.get(configMaps, "orphan") != nil {
			t.Error("applied without a parent")
		}
	})
}

// A cluster-scoped parent's set may have objects in any namespace, and
// pruning finds them there.
func TestIntegrationApplySetClusterScopedParent(t *testing.T) {
	e := newEnv(t)
	other := e.c.Namespace(t)
	file := func(objects string) string {
		return fmt.Sprintf("{operation: ApplySet, name: s, parent: {kind: Namespace, name: %s}, objects: [%s]}", e.ns, objects)
	}
	e.mustApplyFor("h.sh", file(fmt.Sprintf(`{kind: ConfigMap, metadata: {name: here, namespace: %s}}, {kind: ConfigMap, metadata: {name: there, namespace: %s}}`, e.ns, other)))
	there := e.c.Dynamic.Resource(configMaps).Namespace(other)
	if _, err := there.Get(context.Background(), "there", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	e.mustApplyFor("h.sh", file(fmt.Sprintf(`{kind: ConfigMap, metadata: {name: here, namespace: %s}}`, e.ns)))
	if _, err := there.Get(context.Background(), "there", metav1.GetOptions{}); err == nil {
		t.Error("the object in the other namespace was not pruned")
	}
	if e.get(configMaps, "here") == nil {
		t.Error("the object still in the set was deleted")
	}
}
