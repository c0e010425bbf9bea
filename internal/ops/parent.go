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
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/spelling"
)

// parentFields are the fields of "parent".
var parentFields = []string{"apiVersion", "kind", "namespace", "name"}

func (p *parser) parseParent(raw json.RawMessage) {
	js := p.structured("parent", raw, "an object")
	if js == nil {
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil {
		p.fail("parent", "%v", err)
		return
	}
	keys := make([]string, 0, len(fields))
	for k, v := range fields {
		if string(v) != "null" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	ref := &ObjectRef{}
	for _, k := range keys {
		field := "parent." + k
		if k == "uid" {
			p.fail(field, "not needed: the parent is found by name, and its uid read from the cluster; remove it")
			continue
		}
		if !slices.Contains(parentFields, k) {
			if q := spelling.DidYouMean(k, parentFields); q != "" {
				p.fail(field, "unknown field: %s", q)
			} else {
				p.fail(field, "unknown field: parent has only the fields %s", strings.Join(parentFields, ", "))
			}
			continue
		}
		s, ok := p.str(field, fields[k])
		if !ok {
			continue
		}
		switch k {
		case "apiVersion":
			ref.APIVersion = s
			p.checkAPIVersion(field, s)
		case "kind":
			ref.Kind = s
		case "namespace":
			ref.Namespace = s
			p.checkNamespace(field, s)
		case "name":
			ref.Name = s
			p.checkName(field, s)
		}
	}
	for _, k := range []string{"kind", "name"} {
		if !slices.Contains(keys, k) {
			p.fail("parent."+k, "required: the parent is given by kind, name, and namespace when namespaced")
		}
	}
	p.op.Parent = ref
}

// target is an object an operation refers to, with its kind resolved.
type target struct {
	res             kube.Resource
	namespace, name string
}

func (t target) String() string {
	return t.res.APIVersion() + "/" + t.res.GVK.Kind + " " + qualified(t.namespace, t.name)
}

// checkOwnership tells whether parent may own child: Kubernetes garbage
// collection follows an owner reference only to an owner in the child's
// namespace or to a cluster-scoped owner. The error says what to change.
func checkOwnership(parent, child target) error {
	switch {
	case !parent.res.Namespaced:
		return nil
	case !child.res.Namespaced:
		return fmt.Errorf("%s is namespaced, so it cannot own the cluster-scoped %s (a cluster-scoped object can only have a cluster-scoped parent)", parent, child)
	case parent.namespace != child.namespace:
		return fmt.Errorf("%s can only own objects in its own namespace %s, not %s (an owner must be in the same namespace as the objects it owns, or cluster-scoped)", parent, parent.namespace, child)
	}
	return nil
}

// errParentGone marks the error of a parent that does not exist (any
// more): see Applier.apply.
var errParentGone = errors.New("the parent does not exist")

// getParent reads the parent. A missing parent is an error wrapping
// errParentGone.
func (a *Applier) getParent(ctx context.Context, parent target) (*unstructured.Unstructured, error) {
	obj, err := a.clientFor(parent).Get(ctx, parent.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("parent %s not found: %w (%w)", parent, err, errParentGone)
	}
	if err != nil {
		return nil, fmt.Errorf("parent %s: %w", parent, err)
	}
	return obj, nil
}

// setController makes parent the controller owner of obj, keeping obj's
// other owner references. Another controller owner is an error: an object
// has at most one.
func setController(obj, parent *unstructured.Unstructured) error {
	refs := obj.GetOwnerReferences()
	kept := refs[:0]
	for _, r := range refs {
		if r.UID == parent.GetUID() {
			continue
		}
		if r.Controller != nil && *r.Controller {
			return fmt.Errorf("the object names %s %s as its controller in metadata.ownerReferences; an object has only one controller: remove that reference, or the parent", r.Kind, r.Name)
		}
		kept = append(kept, r)
	}
	yes := true
	kept = append(kept, metav1.OwnerReference{
		APIVersion:         parent.GetAPIVersion(),
		Kind:               parent.GetKind(),
		Name:               parent.GetName(),
		UID:                types.UID(parent.GetUID()),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	})
	obj.SetOwnerReferences(kept)
	return nil
}
