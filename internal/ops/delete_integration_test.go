package ops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

const holdFinalizer = "test.hook-operator.dev/hold"

func TestIntegrationDeleteMissingObject(t *testing.T) {
	e := newEnv(t)
	for _, typ := range []string{Delete, DeleteInBackground, DeleteNonCascading} {
		if err := e.apply(fmt.Sprintf("operation: %s\nkind: ConfigMap\nnamespace: %%NS%%\nname: never-was\n", typ)); err != nil {
			t.Errorf("%s of a missing object: %v", typ, err)
		}
	}
}

// family creates a ConfigMap "owner" and a ConfigMap "dependent" that it
// owns (blocking its owner's foreground deletion). A held dependent carries
// a finalizer, so its deletion shows as a deletionTimestamp and waits.
func (e *env) family(held bool) (owner, dependent *unstructured.Unstructured) {
	e.t.Helper()
	owner = e.configMap("owner", nil)
	meta := map[string]any{
		"name": "dependent",
		"ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(owner.GetUID()),
			"blockOwnerDeletion": true,
		}},
	}
	if held {
		meta["finalizers"] = []any{holdFinalizer}
		// Registered after the namespace's cleanup, so it runs before it:
		// a finalizer left behind would keep the namespace forever.
		e.t.Cleanup(func() { e.release("dependent") })
	}
	dependent = e.create(configMaps, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
	return owner, dependent
}

// release removes the hold finalizer from a ConfigMap, if it still exists.
func (e *env) release(name string) {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, _ = e.c.Dynamic.Resource(configMaps).Namespace(e.ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
}

func deleteFile(typ string) string {
	return fmt.Sprintf("operation: %s\nkind: ConfigMap\nnamespace: %%NS%%\nname: owner\n", typ)
}

// recreateOwner creates the owner again, with data that says it is new.
const recreateOwner = "operation: Create\nobject: {apiVersion: v1, kind: ConfigMap, metadata: {name: owner, namespace: %NS%}, data: {new: \"yes\"}}\n"

// wantNewOwner fails the test unless the owner is the one recreateOwner
// made, and not being deleted.
func (e *env) wantNewOwner() {
	e.t.Helper()
	if got := e.mustGet(configMaps, "owner"); nested(got, "data", "new") != "yes" || got.GetDeletionTimestamp() != nil {
		e.t.Errorf("owner after Delete and Create: %v", got.Object)
	}
}

func TestIntegrationDeleteForeground(t *testing.T) {
	t.Run("waits until the dependents are gone", func(t *testing.T) {
		e := newEnv(t)
		e.family(false)
		e.mustApply(deleteFile(Delete))
		// Foreground: the owner goes only after its blocking dependents, and
		// Delete returns only when the owner is gone.
		if e.get(configMaps, "owner") != nil {
			t.Error("Delete returned while the owner still exists")
		}
		if e.get(configMaps, "dependent") != nil {
			t.Error("the dependent outlived its owner's foreground deletion")
		}
	})

	t.Run("lets the same file create the object again", func(t *testing.T) {
		e := newEnv(t)
		e.family(false)
		e.mustApply(deleteFile(Delete) + "---\n" + recreateOwner)
		e.wantNewOwner()
	})

	t.Run("waits for consecutive deletions together, before the next operation", func(t *testing.T) {
		e := newEnv(t)
		e.family(false)
		var file strings.Builder
		for i := range 20 {
			e.configMap(fmt.Sprintf("c-%d", i), nil)
			fmt.Fprintf(&file, "operation: Delete\nkind: ConfigMap\nnamespace: %%NS%%\nname: c-%d\n---\n", i)
		}
		// The owner's deletion waits for its dependent's: the Create after
		// the Deletes must wait for it too.
		file.WriteString(deleteFile(Delete) + "---\n")
		file.WriteString(recreateOwner)
		e.mustApply(file.String())
		for i := range 20 {
			if e.get(configMaps, fmt.Sprintf("c-%d", i)) != nil {
				t.Errorf("c-%d exists after its Delete", i)
			}
		}
		e.wantNewOwner()
		if e.get(configMaps, "dependent") != nil {
			t.Error("the dependent outlived its owner's foreground deletion")
		}
	})

	t.Run("reports a deletion that does not finish", func(t *testing.T) {
		e := newEnv(t)
		e.family(true)
		e.a.DeleteTimeout = 2 * time.Second
		err := e.apply(deleteFile(Delete))
		wantErr(t, err, fmt.Sprintf("operation 0 (Delete v1/ConfigMap %s/owner): ", e.ns),
			"still exists after 2s", "foregroundDeletion")
		owner := e.get(configMaps, "owner")
		if owner == nil || owner.GetDeletionTimestamp() == nil {
			t.Fatal("the owner should be waiting for its dependent")
		}
		e.eventually("the garbage collector deletes the dependent", func() bool {
			d := e.get(configMaps, "dependent")
			return d != nil && d.GetDeletionTimestamp() != nil
		})
		e.release("dependent")
		e.a.DeleteTimeout = 0
		// The hook's next run retries the same file; now it finishes.
		e.mustApply(deleteFile(Delete))
		if e.get(configMaps, "owner") != nil || e.get(configMaps, "dependent") != nil {
			t.Error("owner or dependent left after the retried Delete")
		}
	})
}

func TestIntegrationDeleteInBackground(t *testing.T) {
	e := newEnv(t)
	e.family(true)
	e.mustApply(deleteFile(DeleteInBackground))
	// Background: the owner goes at once, the dependents after it.
	if e.get(configMaps, "owner") != nil {
		t.Error("the owner still exists")
	}
	e.eventually("the garbage collector deletes the dependent", func() bool {
		d := e.get(configMaps, "dependent")
		return d != nil && d.GetDeletionTimestamp() != nil
	})
	e.release("dependent")
	e.eventually("the dependent is gone", func() bool { return e.get(configMaps, "dependent") == nil })
}

func TestIntegrationDeleteNonCascading(t *testing.T) {
	e := newEnv(t)
	e.family(true)
	e.mustApply(deleteFile(DeleteNonCascading))
	// Orphan: the garbage collector removes the owner reference from the
	// dependents, then lets the owner go.
	e.eventually("the owner is gone", func() bool { return e.get(configMaps, "owner") == nil })
	d := e.mustGet(configMaps, "dependent")
	if len(d.GetOwnerReferences()) != 0 {
		t.Errorf("the dependent still has owner references %v", d.GetOwnerReferences())
	}
	if d.GetDeletionTimestamp() != nil {
		t.Error("the dependent is being deleted")
	}
}

// A hook allowed to delete and get a kind, but not to list and watch it,
// still has its Deletes waited for (object by object).
func TestIntegrationDeleteForegroundWithoutListAndWatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	user := "system:serviceaccount:" + e.ns + ":deleter"
	_, err := e.c.Client.RbacV1().Roles(e.ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "deleter"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "delete"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Client.RbacV1().RoleBindings(e.ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deleter"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deleter"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.configMap("a", nil)
	e.configMap("b", nil)
	// The Role may take a moment to be in force.
	e.eventually("the Role to allow get", func() bool {
		_, err := dyn.Resource(configMaps).Namespace(e.ns).Get(ctx, "a", metav1.GetOptions{})
		return err == nil
	})
	if _, err := dyn.Resource(configMaps).Namespace(e.ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list as %s: %v, want Forbidden", user, err)
	}
	e.a.Dynamic = dyn
	e.mustApply("operation: Delete\nkind: ConfigMap\nnamespace: %NS%\nname: a\n---\noperation: Delete\nkind: ConfigMap\nnamespace: %NS%\nname: b\n")
	e.a.Dynamic = e.c.Dynamic
	for _, n := range []string{"a", "b"} {
		if e.get(configMaps, n) != nil {
			t.Errorf("%s exists after its Delete returned", n)
		}
	}
}
