package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hook-operator/hook-operator/internal/applyset"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/limit"
)

// The ApplySet operation: parsed here, applied by applySet. How a set is
// marked in the cluster (the objects' label, the parent's inventory
// annotation, the id) is internal/applyset's.

func (p *parser) checkSetName(field, s string) {
	if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
		p.fail(field, "%q is not a set name: %s", s, strings.Join(msgs, "; "))
		return
	}
	if len(s) > applyset.MaxName {
		p.fail(field, "%q is too long: a set name has at most %d characters", s, applyset.MaxName)
	}
}

func (p *parser) parseObjects(raw json.RawMessage) {
	js := p.structured("objects", raw, "an array")
	if js == nil {
		return
	}
	var list []any
	// utiljson keeps integers int64, as unstructured objects need them.
	if err := utiljson.Unmarshal(js, &list); err != nil {
		p.fail("objects", "%v", err)
		return
	}
	objs := make([]*unstructured.Unstructured, 0, len(list))
	for i, e := range list {
		field := fmt.Sprintf("objects[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			p.fail(field, "must be an object, got %s", describeValue(e))
			continue
		}
		if _, ok := p.object(field, m); ok {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	p.op.Objects = objs
}

// checkApplySet resolves an ApplySet's parent and objects. The error joins
// one *Error per problem.
func (a *Applier) checkApplySet(op Operation, earlier []Operation) (step, error) {
	var errs []error
	fail := func(field string, err error) {
		errs = append(errs, &Error{Index: op.Index, Op: op.String(), Field: field, Err: err})
	}
	s := step{op: op}
	parent, pending, field, err := a.checkParent(op.Parent, earlier)
	if err != nil {
		fail(field, err)
	} else {
		s.parent = &parent
		if pending {
			s.pending = append(s.pending, parent.res)
		}
	}
	seen := map[string]int{}
	for i, o := range op.Objects {
		field := fmt.Sprintf("objects[%d]", i)
		if o.GetName() == "" {
			fail(field+".metadata.name", errors.New("required: ApplySet needs the name of every object"))
			continue
		}
		res, pending, err := a.resolve(o.GetAPIVersion(), o.GetKind(), earlier)
		if err != nil {
			fail(field+".kind", err)
			continue
		}
		if err := checkScope(res, o.GetNamespace()); err != nil {
			fail(field+".metadata.namespace", err)
			continue
		}
		t := target{res: res, namespace: o.GetNamespace(), name: o.GetName()}
		// Also without owner references: pruning looks for the set's
		// objects only where the parent may own them.
		if s.parent != nil {
			if err := checkOwnership(*s.parent, t); err != nil {
				fail(field, err)
				continue
			}
		}
		key := objectKey(res.GVK.GroupKind(), t.namespace, t.name)
		if j, dup := seen[key]; dup {
			fail(field, fmt.Errorf("%s is objects[%d] already: each object may be given once", t, j))
			continue
		}
		seen[key] = i
		s.children = append(s.children, child{res: res, obj: newObject(o, res)})
		if pending {
			s.pending = append(s.pending, res)
		}
	}
	if len(errs) > 0 {
		return step{}, limit.Join(errs)
	}
	return s, nil
}

func objectKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + " " + namespace + "/" + name
}

// applySet applies ApplySet. The order makes it safe to stop at any point
// (an error, a crash) and run again: the inventory lists every kind that
// may have objects of the set before any is written, and loses a kind only
// after its objects are pruned.
func (a *Applier) applySet(ctx context.Context, s step, hookName string) error {
	parentObj, err := a.getParent(ctx, *s.parent)
	if err != nil {
		return err
	}
	id := applyset.ID(hookName, s.op.SetName, parentObj.GetUID())
	key := applyset.InventoryAnnotation(id)
	recorded := parentObj.GetAnnotations()[key]
	previous, err := parseInventory(recorded)
	if err != nil {
		return fmt.Errorf("parent %s: annotation %s: %w; correct it to list the kinds of the set's objects (objects labelled %s=%s)", s.parent, key, err, applyset.Label, id)
	}
	current := inventory{}
	for _, c := range s.children {
		current.add(c.res.GVK)
	}
	all := previous.union(current)

	// 1. Record every kind that will have objects of the set.
	if err := a.setInventory(ctx, *s.parent, key, recorded, all.String()); err != nil {
		return err
	}
	// 2. Write the objects.
	desired := map[string]bool{}
	for i, c := range s.children {
		obj := c.obj.DeepCopy()
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[applyset.Label] = id
		obj.SetLabels(labels)
		if s.op.Owner {
			if err := setController(obj, parentObj); err != nil {
				return fmt.Errorf("objects[%d]: %w", i, err)
			}
		}
		t := target{res: c.res, namespace: obj.GetNamespace(), name: obj.GetName()}
		if err := a.serverSide(ctx, a.clientFor(t), obj, s.op.Force, hookName); err != nil {
			return fmt.Errorf("objects[%d] (%s): %w", i, t, err)
		}
		desired[objectKey(c.res.GVK.GroupKind(), t.namespace, t.name)] = true
	}
	// 3. Delete the set's objects that are not wanted any more.
	pruned := 0
	unserved := inventory{}
	for _, gvk := range all.kinds() {
		res, served, err := a.resolveInventory(gvk)
		if err != nil {
			return fmt.Errorf("prune %s: %w", gvk.Kind, err)
		}
		if !served {
			// Perhaps discovery is only lagging: keep the kind, so its
			// objects are pruned once it is served again.
			a.log(s).WithField("kind", gvk.String()).Warn("kind of the set is not served; its objects are not pruned")
			unserved.add(gvk)
			continue
		}
		n, err := a.prune(ctx, s, res, id, desired)
		pruned += n
		if err != nil {
			return err
		}
	}
	// 4. Forget the kinds that have no objects left.
	if err := a.setInventory(ctx, *s.parent, key, all.String(), current.union(unserved).String()); err != nil {
		return err
	}
	a.log(s).WithFields(map[string]any{"set": id, "applied": len(s.children), "pruned": pruned}).Debug("applied set")
	return nil
}

// prune deletes the objects of kind res labelled with the set's id that are
// not desired, and returns how many it deleted.
func (a *Applier) prune(ctx context.Context, s step, res kube.Resource, id string, desired map[string]bool) (int, error) {
	// A namespaced parent's objects are in its namespace (Check ensures it);
	// a cluster-scoped parent's may be anywhere.
	namespace := ""
	if s.parent.res.Namespaced && res.Namespaced {
		namespace = s.parent.namespace
	}
	c := a.clientFor(target{res: res, namespace: namespace})
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: applyset.Label + "=" + id})
	if err != nil {
		return 0, fmt.Errorf("list %s of the set: %w", res.GVK.Kind, err)
	}
	n := 0
	for _, obj := range list.Items {
		t := target{res: res, namespace: obj.GetNamespace(), name: obj.GetName()}
		if desired[objectKey(res.GVK.GroupKind(), t.namespace, t.name)] || obj.GetDeletionTimestamp() != nil {
			continue
		}
		background := metav1.DeletePropagationBackground
		uid := obj.GetUID()
		err := a.clientFor(t).Delete(ctx, t.name, metav1.DeleteOptions{
			PropagationPolicy: &background,
			// Never another object that took the name meanwhile.
			Preconditions: &metav1.Preconditions{UID: &uid},
		})
		switch {
		case err == nil:
			n++
			a.log(s).WithField("object", t.String()).Debug("pruned")
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or replaced by an object the next run sees.
		default:
			return n, fmt.Errorf("prune %s: %w", t, err)
		}
	}
	return n, nil
}

// setInventory sets the parent's annotation key from old to value; an empty
// value removes it.
func (a *Applier) setInventory(ctx context.Context, parent target, key, old, value string) error {
	if old == value {
		return nil
	}
	var v any
	if value != "" {
		v = value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return err
	}
	_, err = a.clientFor(parent).Patch(ctx, parent.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: a.fieldManager()})
	if err != nil {
		return fmt.Errorf("parent %s: record the set's kinds in annotation %s: %w", parent, key, err)
	}
	return nil
}

// resolveInventory finds the resource of a kind of the inventory. The
// version recorded may no longer be served; any served version of the
// group lists the same objects. served is false when the kind is not
// served at all.
func (a *Applier) resolveInventory(gvk schema.GroupVersionKind) (res kube.Resource, served bool, err error) {
	res, err = a.Resolver.Resolve(gvk.GroupVersion().String(), gvk.Kind)
	if err == nil {
		return res, true, nil
	}
	if !errors.Is(err, kube.ErrUnknownKind) {
		return res, false, err
	}
	res, err = a.Resolver.Resolve("", gvk.Kind)
	if err == nil && res.GVK.Group == gvk.Group {
		return res, true, nil
	}
	if err != nil && !errors.Is(err, kube.ErrUnknownKind) {
		return res, false, err
	}
	return kube.Resource{}, false, nil
}

// inventory is a set of kinds, one version each.
type inventory map[schema.GroupKind]string

func (inv inventory) add(gvk schema.GroupVersionKind) { inv[gvk.GroupKind()] = gvk.Version }

// union returns the kinds of both; other's versions win.
func (inv inventory) union(other inventory) inventory {
	out := inventory{}
	for gk, v := range inv {
		out[gk] = v
	}
	for gk, v := range other {
		out[gk] = v
	}
	return out
}

func (inv inventory) kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(inv))
	for gk, v := range inv {
		out = append(out, gk.WithVersion(v))
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.GroupKind().String(), b.GroupKind().String())
	})
	return out
}

// String is the annotation's value: "apps/v1/Deployment,v1/ConfigMap",
// sorted by kind and group.
func (inv inventory) String() string {
	var parts []string
	for _, gvk := range inv.kinds() {
		parts = append(parts, gvk.GroupVersion().String()+"/"+gvk.Kind)
	}
	return strings.Join(parts, ",")
}

func parseInventory(s string) (inventory, error) {
	inv := inventory{}
	if strings.TrimSpace(s) == "" {
		return inv, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		i := strings.LastIndex(part, "/")
		if i <= 0 || i == len(part)-1 {
			return nil, fmt.Errorf("%q is not apiVersion/Kind", part)
		}
		gv, err := schema.ParseGroupVersion(part[:i])
		if err != nil {
			return nil, fmt.Errorf("%q is not apiVersion/Kind: %w", part, err)
		}
		inv.add(gv.WithKind(part[i+1:]))
	}
	return inv, nil
}
