package hook

import (
	"fmt"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// checkKinds checks, offline, the apiVersion and kind of each kubernetes
// binding of cfg against Kubernetes' own kinds (kube.CheckBuiltinKind): a
// near miss of a built-in kind ("Namespce") is an error, not a binding
// that waits forever for a CRD while the bindings grouped with it run
// without it. Kinds that may be custom resources are left to the cluster.
func checkKinds(hookName string, cfg Config) ConfigErrors {
	var errs ConfigErrors
	for i, b := range cfg.Kubernetes {
		if p := kube.CheckBuiltinKind(b.APIVersion, b.Kind); p != nil {
			errs = append(errs, &ConfigError{Hook: hookName, Field: fmt.Sprintf("kubernetes[%d].%s", i, p.Field),
				Reason: fmt.Sprintf("binding %q: %s", b.Name, p.Reason)})
		}
	}
	return errs
}
