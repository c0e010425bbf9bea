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
		disabled    []string
		folder      hook.FolderOptions
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print the hooks of a folder and their bindings, as the operator parses them",
		Long: `list finds every hook in the hooks folder (executable files, recursively;
names starting with "." and folders named "lib" are skipped), runs each as
"<hook> --config" from its own folder, validates the configurations and
prints them.

The table has one row per binding; MODE is one-shot, or resident for a hook
with settings.resident. Below it, SKIPPED lists what is not run and why:
entries matched by the folder's .hookignore, hooks named by --disabled-hooks
and hooks whose configuration has no bindings. -o wide adds DETAILS: what
differs from the defaults (the finalizer option included) and a settings row.
Each row stays on one line: whitespace in a value, such as a multi-line
jqFilter, becomes single spaces. -o yaml or -o json print every field as
configured, with the defaults filled in, and each skipped entry as
{name, skipped: reason}.

Files that look like mistakes (not executable, broken symlinks) are reported
on stderr as warnings, and so are symlinks whose target is outside the
folder: they are skipped unless --hooks-allow-external-symlinks is set.
Control characters in names and values are shown escaped (\x1b). When any hook cannot be run
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
			if err := hook.CheckDisabled(disabled); err != nil {
				return err
			}
			if timeout <= 0 {
				return fmt.Errorf("--config-timeout %s: use a positive duration such as 30s", timeout)
			}
			// Hooks run in their own process groups, out of reach of a
			// terminal's Ctrl-C; cancelling kills those groups.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var skipped []hook.Skipped
			hooks, err := hook.Load(ctx, dir, hook.LoadOptions{
				ConfigTimeout: timeout,
				Warn:          func(msg string) { fmt.Fprintf(stderr, "warning: %s\n", msg) },
				Disabled:      disabled,
				Skip:          func(s hook.Skipped) { skipped = append(skipped, s) },
				Folder:        folder,
			})
			var problems hook.ConfigErrors
			switch {
			case err == nil:
			case errors.As(err, &problems), errors.Is(err, context.Canceled):
				return err
			case isDir(dir):
				return err // the folder is there: the error says what to change in it
			default:
				return fmt.Errorf("%w; set --hooks-dir (or %s) to the folder holding the hooks", err, EnvHooksDir)
			}
			if len(hooks) == 0 {
				fmt.Fprintf(stderr, "warning: no hooks found in %s\n", dir)
			}
			return write(stdout, hooks, skipped, output)
		},
	}
	fs := cmd.Flags()
	BindHooksDir(fs, &dir)
	BindConfigTimeout(fs, &timeout)
	BindDisabledHooks(fs, &disabled)
	BindFolder(fs, &folder)
	fs.StringVarP(&output, "output", "o", "table", "output format: table, wide (table with values in full), json or yaml")
	return cmd
}

// skippedEntry is how -o json and yaml show a skipped entry: beside the
// hooks, with its reason where a hook has its configuration.
type skippedEntry struct {
	Name    string `json:"name"`
	Skipped string `json:"skipped"`
}

func write(out io.Writer, hooks []*hook.Hook, skipped []hook.Skipped, format string) error {
	entries := []any{}
	for _, h := range hooks {
		entries = append(entries, h)
	}
	for _, s := range skipped {
		entries = append(entries, skippedEntry{Name: s.Name, Skipped: s.Reason})
	}
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	case "yaml":
		b, err := yaml.Marshal(entries)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "wide":
		return writeTable(out, hooks, skipped, true)
	default:
		return writeTable(out, hooks, skipped, false)
	}
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
