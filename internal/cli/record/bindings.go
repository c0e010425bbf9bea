package record

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// recordingHooks returns copies of the hooks that have kubernetes
// bindings, holding only those bindings, changed so that the watch delivers
// what replay needs and writes nothing: every object in full (replay runs
// the jqFilters itself), every event type, no finalizer (so an object being
// deleted shows as Modified with its deletionTimestamp, which replay makes
// a Finalize event) and no periodic Synchronization. hooks are not changed.
func recordingHooks(hooks []*hook.Hook) []*hook.Hook {
	var out []*hook.Hook
	for _, h := range hooks {
		if len(h.Config.Kubernetes) == 0 {
			continue
		}
		c := &hook.Hook{Name: h.Name, Path: h.Path, Dir: h.Dir}
		c.Config.Kubernetes = make([]hook.KubernetesBinding, len(h.Config.Kubernetes))
		for i, b := range h.Config.Kubernetes {
			b.KeepFullObjectsInMemory = true
			b.Filter, b.JQFilter = nil, ""
			b.ExecuteHookOnEvent = []string{hook.Added, hook.Modified, hook.Deleted}
			b.ExecuteHookOnSynchronization = true
			b.Finalizer = ""
			b.ResynchronizationPeriod = 0
			c.Config.Kubernetes[i] = b
		}
		out = append(out, c)
	}
	return out
}

// servedBindings drops, from hooks made by recordingHooks, the bindings
// whose kind the cluster does not serve (their CRD is not installed): the
// recording would wait for them forever. It returns the resources of the
// bindings kept, each once.
func servedBindings(hooks []*hook.Hook, resolver *kube.Resolver, log logrus.FieldLogger) ([]*hook.Hook, []kube.Resource, error) {
	var out []*hook.Hook
	var resources []kube.Resource
	seen := map[string]bool{}
	for _, h := range hooks {
		var kept []hook.KubernetesBinding
		for _, b := range h.Config.Kubernetes {
			res, err := resolver.Resolve(b.APIVersion, b.Kind)
			if errors.Is(err, kube.ErrUnknownKind) {
				log.WithFields(logrus.Fields{"hook": h.Name, "binding": b.Name, "kind": b.Kind}).
					Warn("kind is not served (is its CRD installed?); its objects are not recorded")
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("hook %s: binding %q: %w", h.Name, b.Name, err)
			}
			kept = append(kept, b)
			if !seen[res.GVR.String()] {
				seen[res.GVR.String()] = true
				resources = append(resources, res)
			}
		}
		if len(kept) > 0 {
			c := *h
			c.Config.Kubernetes = kept
			out = append(out, &c)
		}
	}
	return out, resources, nil
}

// selectsNamespacesByLabel reports whether a binding picks namespaces by
// their labels, which replay can only do with the Namespace objects.
func selectsNamespacesByLabel(hooks []*hook.Hook) bool {
	for _, h := range hooks {
		for _, b := range h.Config.Kubernetes {
			if b.Namespace != nil && b.Namespace.LabelSelector != nil {
				return true
			}
		}
	}
	return false
}
