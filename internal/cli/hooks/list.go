package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/hook"
)

func newList(stdout, stderr io.Writer) *cobra.Command {
	var (
		dir, output string
		timeout     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print the hooks of a folder and their bindings, as the operator parses them",
		Long: `list finds every hook in the hooks folder (executable files, recursively;
names starting with "." and folders named "lib" are skipped), runs each as
"<hook> --config" from its own folder, validates the configurations and
prints them.

The table has one row per binding; MODE is one-shot, or resident for a hook
with settings.resident. DETAILS shows only what differs from the defaults
(the finalizer option included). Each row stays on one
line: whitespace in a value, such as a multi-line jqFilter, becomes single
spaces, and items longer than 60 characters are cut with "…". -o wide shows
them whole; -o yaml or -o json print every field as configured, with the
defaults filled in.

Skipped files are reported on stderr as warnings. When any hook cannot be run
or has an invalid configuration, nothing is printed on stdout: every problem
of every hook goes to stderr, and the exit code is 1.`,
		Example: `  # The hooks of a local checkout, as a table
  hook-operator hooks list --hooks-dir ./hooks

  # Long jqFilters in full, one row per binding
  hook-operator hooks list --hooks-dir ./hooks -o wide

  # Every field, defaults included
  hook-operator hooks list --hooks-dir ./hooks -o yaml

  # In CI: fail when a hook's configuration is invalid
  HOOK_OPERATOR_HOOKS_DIR=./hooks hook-operator hooks list >/dev/null`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains([]string{"table", "wide", "json", "yaml"}, output) {
				return fmt.Errorf("--output %q: use table, wide, json or yaml", output)
			}
			if timeout <= 0 {
				return fmt.Errorf("--config-timeout %s: use a positive duration such as 30s", timeout)
			}
			// Hooks run in their own process groups, out of reach of a
			// terminal's Ctrl-C; cancelling kills those groups.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hooks, err := hook.Load(ctx, dir, hook.LoadOptions{
				ConfigTimeout: timeout,
				Warn:          func(msg string) { fmt.Fprintf(stderr, "warning: %s\n", msg) },
			})
			var problems hook.ConfigErrors
			switch {
			case err == nil:
			case errors.As(err, &problems), errors.Is(err, context.Canceled):
				return err
			default:
				return fmt.Errorf("%w; set --hooks-dir (or %s) to the folder holding the hooks", err, EnvHooksDir)
			}
			if len(hooks) == 0 {
				fmt.Fprintf(stderr, "warning: no hooks found in %s\n", dir)
			}
			return write(stdout, hooks, output)
		},
	}
	fs := cmd.Flags()
	BindHooksDir(fs, &dir)
	BindConfigTimeout(fs, &timeout)
	fs.StringVarP(&output, "output", "o", "table", "output format: table, wide (table with values in full), json or yaml")
	return cmd
}

func write(out io.Writer, hooks []*hook.Hook, format string) error {
	if hooks == nil {
		hooks = []*hook.Hook{}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(hooks)
	case "yaml":
		b, err := yaml.Marshal(hooks)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "wide":
		return writeTable(out, hooks, true)
	default:
		return writeTable(out, hooks, false)
	}
}
