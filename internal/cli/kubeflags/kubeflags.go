// Package kubeflags defines the flags that choose the cluster, shared by
// every command that talks to one.
package kubeflags

import (
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
)

// Bind adds --kubeconfig and --kube-context to fs, stored in kubeconfig and
// context and bound to HOOK_OPERATOR_KUBECONFIG and HOOK_OPERATOR_KUBE_CONTEXT.
// Without --kubeconfig the client reads $KUBECONFIG, then ~/.kube/config,
// then the Pod's ServiceAccount.
func Bind(fs *pflag.FlagSet, kubeconfig, context *string) {
	fs.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	envflag.Bind(fs, "kubeconfig", "HOOK_OPERATOR_KUBECONFIG")
	envflag.BindAlias(fs, "kubeconfig", envflag.Same("KUBE_CONFIG"))
	fs.StringVar(context, "kube-context", "", "kubeconfig context to use (default: its current context)")
	envflag.Bind(fs, "kube-context", "HOOK_OPERATOR_KUBE_CONTEXT")
	envflag.BindAlias(fs, "kube-context", envflag.Same("KUBE_CONTEXT"))
}
