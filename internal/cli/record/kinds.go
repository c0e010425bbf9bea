package record

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/kube"
)

var (
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// recordKinds makes the kinds of resources known to replay, which knows
// only the kinds built into Kubernetes: for each other kind it records its
// CustomResourceDefinition, or, when that cannot be read (no permission,
// or the kind is not defined by a CRD), a declaration of the resource.
func recordKinds(ctx context.Context, client dynamic.Interface, resources []kube.Resource, rec *recorder) ([]fixture.Resource, error) {
	builtin := builtinResources()
	var declared []fixture.Resource
	for _, res := range resources {
		if builtin[res.APIVersion()+" "+res.GVR.Resource] {
			continue
		}
		name := res.GVR.Resource + "." + res.GVR.Group
		crd, err := client.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			rec.add(crd)
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			declared = append(declared, fixture.Resource{
				APIVersion: res.APIVersion(),
				Kind:       res.GVK.Kind,
				Resource:   res.GVR.Resource,
				Namespaced: res.Namespaced,
			})
		default:
			return nil, fmt.Errorf("read the CustomResourceDefinition %s: %w", name, err)
		}
	}
	return declared, nil
}

// builtinResources returns "apiVersion resource" of every kind built into
// Kubernetes.
func builtinResources() map[string]bool {
	set := map[string]bool{}
	for _, l := range kube.BuiltinResources() {
		for _, r := range l.APIResources {
			set[l.GroupVersion+" "+r.Name] = true
		}
	}
	return set
}

// recordNamespaces adds every Namespace, for bindings that select
// namespaces by label.
func recordNamespaces(ctx context.Context, client dynamic.Interface, rec *recorder) error {
	list, err := client.Resource(namespaceGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces (a binding selects namespaces by label): %w", err)
	}
	for i := range list.Items {
		ns := list.Items[i]
		rec.add(&ns)
	}
	return nil
}
