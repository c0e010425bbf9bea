package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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

The table has one row per binding and shows, under DETAILS, only what differs
from the defaults; -o yaml or -o json print every field with the defaults
filled in.

Skipped files are reported on stderr as warnings. When any hook cannot be run
or has an invalid configuration, nothing is printed on stdout: every problem
of every hook goes to stderr, and the exit code is 1.`,
		Example: `  # The hooks of a local checkout, as a table
  hook-operator hooks list --hooks-dir ./hooks

  # Every field, defaults included
  hook-operator hooks list --hooks-dir ./hooks -o yaml

  # In CI: fail when a hook's configuration is invalid
  HOOK_OPERATOR_HOOKS_DIR=./hooks hook-operator hooks list >/dev/null`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: use table, json or yaml", output)
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
	fs.StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
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
	default:
		return writeTable(out, hooks)
	}
}
