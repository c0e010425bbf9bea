// Package kubeflags defines the flags that choose the cluster, shared by
// every command that talks to one.
package kubeflags

import (
	"github.com/hook-operator/hook-operator/internal/cli/envflag"
)

// Flags choose the cluster and how to reach it.
type Flags struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG, then
	// ~/.kube/config, then the Pod's ServiceAccount.
	Kubeconfig string
	// Context is the kubeconfig's context; empty: its current one.
	Context string
	// Server replaces the API server's address that the kubeconfig or
	// the Pod gives, as kubectl's --server does.
	Server string
}

// Settings is the table of --kubeconfig, --kube-context and --kube-server,
// stored in f.
func Settings(f *Flags) []envflag.Setting {
	return []envflag.Setting{
		{Name: "kubeconfig", Value: envflag.String(&f.Kubeconfig, ""), Usage: "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)",
			Doc:   "kubeconfig file; without it: `$KUBECONFIG`, then `~/.kube/config`, then the Pod's ServiceAccount",
			Shell: envflag.Shell{Flag: "kube-config", Env: []string{"KUBE_CONFIG"}}},
		{Name: "kube-context", Value: envflag.String(&f.Context, ""), Usage: "kubeconfig context to use (default: its current context)",
			Doc: "kubeconfig context", DocDefault: "current context", Shell: envflag.Shell{Flag: "kube-context", Env: []string{"KUBE_CONTEXT"}}},
		{Name: "kube-server", Value: envflag.String(&f.Server, ""), Usage: "the API server's address, https://HOST:PORT, in place of the kubeconfig's or the Pod's",
			Doc:   "the API server's address, in place of the one the kubeconfig (or the Pod's ServiceAccount) gives, as kubectl's `--server`; the credentials and CA stay those of the kubeconfig or the Pod",
			Shell: envflag.Shell{Flag: "kube-server", Env: []string{"KUBE_SERVER"}}},
	}
}
