package hook

import (
	"fmt"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// checkKinds checks, offline, the apiVersion and kind of each kubernetes
// binding of cfg against Kubernetes' own kinds (kube.BuiltinKinds.Check): a
// near miss of a built-in kind ("Namespce") is an error, not a binding
// that waits forever for a CRD while the bindings grouped with it run
// without it. Kinds that may be custom resources are left to the cluster.
// builtin is asked for the index only when cfg has kubernetes bindings.
func checkKinds(builtin func() *kube.BuiltinKinds, hookName string, cfg Config) ConfigErrors {
	var errs ConfigErrors
	for i, b := range cfg.Kubernetes {
		if p := builtin().Check(b.APIVersion, b.Kind); p != nil {
			errs = append(errs, &ConfigError{Hook: hookName, Field: fmt.Sprintf("kubernetes[%d].%s", i, p.Field),
				Reason: fmt.Sprintf("binding %q: %s", b.Name, p.Reason)})
		}
	}
	return errs
}

// MissingKind is the configuration error of kubernetes binding i of the
// hook named hookName whose kind the cluster does not serve although it
// serves the binding's group/version: err is the resolver's
// kube.MissingKindError, which lists what the group/version serves, with
// a did-you-mean.
func MissingKind(hookName string, i int, b KubernetesBinding, err error) *ConfigError {
	return &ConfigError{Hook: hookName, Field: fmt.Sprintf("kubernetes[%d].kind", i),
		Reason: fmt.Sprintf("binding %q: %v; fix the kind, or install the CRD that serves it before the hooks that use it", b.Name, err)}
}
