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

// Environment variables of the flags below.
const (
	EnvHooksDir = "HOOK_OPERATOR_HOOKS_DIR"
	// EnvShellOperatorHooksDir is read when EnvHooksDir is not set, so that
	// a shell-operator deployment keeps working while it migrates.
	EnvShellOperatorHooksDir = "SHELL_OPERATOR_HOOKS_DIR"
	EnvConfigTimeout         = "HOOK_OPERATOR_CONFIG_TIMEOUT"
	EnvDisabledHooks         = "HOOK_OPERATOR_DISABLED_HOOKS"
	EnvAllowExternalSymlinks = "HOOK_OPERATOR_HOOKS_ALLOW_EXTERNAL_SYMLINKS"
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

// BindHooksDir adds --hooks-dir to fs, stored in p and bound to
// HOOK_OPERATOR_HOOKS_DIR and SHELL_OPERATOR_HOOKS_DIR. Every command that
// loads hooks uses it, so that they all read the same settings.
func BindHooksDir(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "hooks-dir", DefaultHooksDir, "folder holding the hooks, searched recursively")
	envflag.Bind(fs, "hooks-dir", EnvHooksDir, EnvShellOperatorHooksDir)
}

// BindConfigTimeout adds --config-timeout to fs, stored in p and bound to
// HOOK_OPERATOR_CONFIG_TIMEOUT.
func BindConfigTimeout(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "config-timeout", hook.DefaultConfigTimeout, "how long one hook's --config run may take before its process group is killed")
	envflag.Bind(fs, "config-timeout", EnvConfigTimeout)
}

// BindDisabledHooks adds --disabled-hooks to fs, stored in p and bound to
// HOOK_OPERATOR_DISABLED_HOOKS, so that `hooks list` shows what `start`
// with the same environment leaves out.
func BindDisabledHooks(fs *pflag.FlagSet, p *[]string) {
	fs.StringSliceVar(p, "disabled-hooks", nil, "hook names or globs (debug/*) not to load, comma-separated; hooks list shows them")
	envflag.Bind(fs, "disabled-hooks", EnvDisabledHooks)
}

// BindFolder adds --hooks-allow-external-symlinks to fs, stored in p and
// bound to HOOK_OPERATOR_HOOKS_ALLOW_EXTERNAL_SYMLINKS. Every command that
// loads hooks uses it beside BindHooksDir, so that they all follow the
// same links.
func BindFolder(fs *pflag.FlagSet, p *hook.FolderOptions) {
	fs.BoolVar(&p.AllowExternalSymlinks, strings.TrimPrefix(hook.AllowExternalSymlinksFlag, "--"), false,
		"follow symlinks in the hooks folder that lead outside it (off: skipped with a warning)")
	envflag.Bind(fs, strings.TrimPrefix(hook.AllowExternalSymlinksFlag, "--"), EnvAllowExternalSymlinks)
}
