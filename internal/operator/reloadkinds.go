package operator

import (
	"errors"
	"slices"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// missingKinds returns an error for each kubernetes binding that a reload
// from prev to next would change (a binding of the same name and hook
// that runs now) to a kind missing from a group/version the cluster
// serves (kube.MissingKindError): a reload with one is not applied, so
// that a misspelled kind does not replace a binding that works. A new
// binding with such a kind is not refused: it waits for its kind, as a
// binding of a CRD not installed yet does (the CRD of a new kind of an
// existing group may come after the hook), and the watch logs it with a
// did-you-mean and /readyz names it. Unchanged bindings are not asked
// about, nor is anything when r is nil; other errors of r (the API
// server away) are left to the watch, which retries.
func missingKinds(prev, next []*hook.Hook, r ops.Resolver) hook.ConfigErrors {
	if r == nil {
		return nil
	}
	var errs hook.ConfigErrors
	for _, h := range next {
		var was []hook.KubernetesBinding
		if i := slices.IndexFunc(prev, func(p *hook.Hook) bool { return p.Name == h.Name }); i >= 0 {
			was = prev[i].Config.Kubernetes
		}
		for i, k := range h.Config.Kubernetes {
			j := slices.IndexFunc(was, func(w hook.KubernetesBinding) bool { return w.Name == k.Name })
			if j < 0 || sameJSON(was[j], k) {
				continue
			}
			var missing *kube.MissingKindError
			if _, err := r.Resolve(k.APIVersion, k.Kind); errors.As(err, &missing) {
				errs = append(errs, hook.MissingKind(h.Name, i, k, err))
			}
		}
	}
	return errs
}
