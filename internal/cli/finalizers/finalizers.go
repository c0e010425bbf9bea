// Package finalizers implements `hook-operator finalizers`: commands for
// the finalizers that kubernetes bindings keep on their objects.
package finalizers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	hookscmd "github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/cli/kubeflags"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// New returns the finalizers command with its release subcommand.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "finalizers",
		Short: "Manage the finalizers that hooks' bindings keep on objects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("name a subcommand: %s release", cmd.CommandPath())
		},
	}
	cmd.AddCommand(newRelease(stdout, log))
	return cmd
}

type releaseFlags struct {
	hooksDir, hookName string
	kube               kubeflags.Flags
	configTimeout      time.Duration
	dryRun             bool
	hooksFolder        hook.FolderOptions
}

func newRelease(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Remove the hooks' finalizers from every object that holds them",
		Long: `release finds every kubernetes binding with a finalizer among the hooks under
--hooks-dir, lists the objects of its kind that hold that finalizer, and removes
it, so that objects being deleted are no longer held.

Use it when you remove a hook (or the whole operator) that kept finalizers:
without it, objects being deleted would wait forever for a hook that no longer
runs. Stop the operator first, or it adds the finalizers back. Objects are not
deleted by this command; those already being deleted finish deleting.`,
		Example: `  hook-operator finalizers release --hooks-dir ./hooks --dry-run
  hook-operator finalizers release --hooks-dir ./hooks --hook db/sampledb.sh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return release(ctx, f, stdout, log)
		},
	}
	fs := cmd.Flags()
	hookscmd.BindHooksDir(fs, &f.hooksDir)
	hookscmd.BindConfigTimeout(fs, &f.configTimeout)
	hookscmd.BindFolder(fs, &f.hooksFolder)
	envflag.Define(fs, kubeflags.Settings(&f.kube)...)
	fs.StringVar(&f.hookName, "hook", "", "only this hook (its path under --hooks-dir)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be released; change nothing")
	return cmd
}

func release(ctx context.Context, f releaseFlags, out io.Writer, log *logrus.Logger) error {
	hooks, err := hook.Load(ctx, f.hooksDir, hook.LoadOptions{ConfigTimeout: f.configTimeout, Folder: f.hooksFolder, Warn: func(m string) { log.Warn(m) }})
	if err != nil {
		return fmt.Errorf("hooks in %s:\n%w", f.hooksDir, err)
	}
	cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: f.kube.Kubeconfig, Context: f.kube.Context, Server: f.kube.Server})
	if err != nil {
		return err
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		return err
	}
	m := finalizer.New(clients.Dynamic, log)
	found, bindings := 0, 0
	var errs []error
	for _, h := range hooks {
		if f.hookName != "" && h.Name != f.hookName {
			continue
		}
		for _, b := range h.Config.Kubernetes {
			if b.Finalizer == "" {
				continue
			}
			bindings++
			res, err := clients.Resolver.Resolve(b.APIVersion, b.Kind)
			if errors.Is(err, kube.ErrUnknownKind) {
				fmt.Fprintf(out, "%s: binding %q: kind %s is not served; nothing holds its finalizer\n", h.Name, b.Name, b.Kind)
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: binding %q: %w", h.Name, b.Name, err))
				continue
			}
			selector := ""
			if b.LabelSelector != nil {
				sel, err := metav1.LabelSelectorAsSelector(b.LabelSelector)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				selector = sel.String()
			}
			// The finalizer is the binding's own name for it: every object
			// holding it is released, whatever namespace it is in now.
			targets, err := m.Holders(ctx, res.GVR, "", selector, b.Finalizer)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: binding %q: list %s: %w", h.Name, b.Name, res.GVR.Resource, err))
				continue
			}
			for _, t := range targets {
				found++
				if f.dryRun {
					fmt.Fprintf(out, "would release %s\n", t)
					continue
				}
				if _, err := m.Remove(ctx, t); err != nil {
					errs = append(errs, fmt.Errorf("release %s: %w", t, err))
					continue
				}
				fmt.Fprintf(out, "released %s\n", t)
			}
		}
	}
	if f.hookName != "" && bindings == 0 {
		errs = append(errs, fmt.Errorf("hook %q has no binding with a finalizer (or does not exist under %s)", f.hookName, f.hooksDir))
	}
	fmt.Fprintf(out, "%d object(s) held by %d binding(s) with a finalizer\n", found, bindings)
	return errors.Join(errs...)
}
