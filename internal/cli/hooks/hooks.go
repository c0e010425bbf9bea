// Package hooks implements `hook-operator hooks`, the commands that show
// what the operator would make of a hooks folder without starting it.
package hooks

import (
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// Environment variables of the flags below, as envflag derives them.
var (
	EnvHooksDir              = envflag.EnvName("hooks-dir")
	EnvAllowExternalSymlinks = envflag.EnvName(strings.TrimPrefix(hook.AllowExternalSymlinksFlag, "--"))
)

// DefaultHooksDir is where the hooks are looked for when nothing says
// otherwise, as in shell-operator's image.
const DefaultHooksDir = "/hooks"

// New returns the `hooks` command and its subcommands, printing results to
// stdout and warnings to stderr.
func New(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Inspect the hooks in a hooks folder without starting the operator",
		Long: `Commands that find the hooks in a folder and ask each for its configuration,
exactly as the operator does at start-up, without connecting to a cluster.`,
		// Runnable, so that a mistyped subcommand is an error rather than
		// a help page and exit 0.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newList(stdout, stderr))
	return cmd
}

// HooksDirSetting is --hooks-dir, stored in p. Every command that loads
// hooks has it, so that they all read the same settings.
func HooksDirSetting(p *string) envflag.Setting {
	return envflag.Setting{Name: "hooks-dir", Value: envflag.String(p, DefaultHooksDir), Usage: "folder holding the hooks, searched recursively",
		Doc: "folder of hooks, searched recursively", Shell: envflag.Shell{Flag: "hooks-dir", Env: []string{"SHELL_OPERATOR_HOOKS_DIR"}}}
}

// ConfigTimeoutSetting is --config-timeout, stored in p.
func ConfigTimeoutSetting(p *time.Duration) envflag.Setting {
	return envflag.Setting{Name: "config-timeout", Value: envflag.Duration(p, hook.DefaultConfigTimeout),
		Usage: "how long one hook's --config run may take before its process group is killed",
		Doc:   "a hook's `--config` run is stopped after this long"}
}

// DisabledHooksSetting is --disabled-hooks, stored in p, so that `hooks
// list` shows what `start` with the same environment leaves out.
func DisabledHooksSetting(p *[]string) envflag.Setting {
	return envflag.Setting{Name: "disabled-hooks", Value: envflag.StringSlice(p, nil),
		Usage:      "hook names or globs (debug/*) not to load, comma-separated; hooks list shows them",
		Doc:        "comma-separated hook names or globs (`debug/*`, `**/x-*`) not to load; their `--config` is not run ([choosing which hooks run](bindings.md#choosing-which-hooks-run))",
		DocDefault: "none"}
}

// FolderSetting is --hooks-allow-external-symlinks, stored in p. Every
// command that loads hooks has it beside --hooks-dir, so that they all
// follow the same links.
func FolderSetting(p *hook.FolderOptions) envflag.Setting {
	return envflag.Setting{Name: strings.TrimPrefix(hook.AllowExternalSymlinksFlag, "--"), Value: envflag.Bool(&p.AllowExternalSymlinks, false),
		Usage: "follow symlinks in the hooks folder that lead outside it (off: skipped with a warning)",
		Doc:   "follow symlinks in the hooks folder whose target resolves outside it; off, each is skipped with a warning naming it and its target, and nothing behind it runs or is watched. Links that resolve inside (a ConfigMap volume's keys through `..data`) are followed either way ([finding hooks](bindings.md#finding-hooks))"}
}

// BindHooksDir, BindConfigTimeout, BindDisabledHooks and BindFolder add
// the setting of that name to fs.
func BindHooksDir(fs *pflag.FlagSet, p *string) { envflag.Define(fs, HooksDirSetting(p)) }

// BindConfigTimeout: see BindHooksDir.
func BindConfigTimeout(fs *pflag.FlagSet, p *time.Duration) {
	envflag.Define(fs, ConfigTimeoutSetting(p))
}

// BindDisabledHooks: see BindHooksDir.
func BindDisabledHooks(fs *pflag.FlagSet, p *[]string) { envflag.Define(fs, DisabledHooksSetting(p)) }

// BindFolder: see BindHooksDir.
func BindFolder(fs *pflag.FlagSet, p *hook.FolderOptions) { envflag.Define(fs, FolderSetting(p)) }
