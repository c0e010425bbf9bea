// Package cli builds the hook-operator command line. It parses flags and
// environment variables and calls into the runtime packages; it holds no
// runtime logic of its own.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/cli/debug"
	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/cli/finalizers"
	"github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/cli/hooktest"
	rbaccmd "github.com/hook-operator/hook-operator/internal/cli/rbac"
	"github.com/hook-operator/hook-operator/internal/cli/record"
	"github.com/hook-operator/hook-operator/internal/cli/replay"
	"github.com/hook-operator/hook-operator/internal/cli/start"
	"github.com/hook-operator/hook-operator/internal/cli/trigger"
	"github.com/hook-operator/hook-operator/internal/cli/version"
	"github.com/hook-operator/hook-operator/internal/logging"
)

// Environment variables for the global flags.
var (
	EnvLogLevel  = envflag.EnvName("log-level")
	EnvLogFormat = envflag.EnvName("log-format")
)

// Execute runs the command line args and returns the process exit code:
// 0 on success, 1 on any error (printed to stderr).
func Execute(args []string, stdout, stderr io.Writer) int {
	cmd := NewRootCommand(stdout, stderr, os.LookupEnv)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		if len(args) > 0 && strings.HasPrefix(err.Error(), "unknown command ") {
			err = unknownCommand(args[0], err)
		}
		fmt.Fprintf(stderr, "hook-operator: %v\n", err)
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// shellOperatorCommands are shell-operator's commands that a migrating
// user may type, and what does the same here.
var shellOperatorCommands = map[string]string{
	"queue":  "hook-operator debug queues (shell-operator's queue list and queue main)",
	"hook":   "hook-operator debug hooks, or hook-operator debug snapshots HOOK (shell-operator's hook list and hook snapshot), or hook-operator hooks list for a folder",
	"config": "nothing: the log level is --log-level at start; hook-operator debug shows the queues, hooks and snapshots",
	"raw":    "hook-operator debug queues|hooks|role -o json",
}

// unknownCommand says, for a command of shell-operator's, what to run
// here; cobra's own suggestions (from the commands' names) stay.
func unknownCommand(name string, err error) error {
	if use, ok := shellOperatorCommands[name]; ok {
		return fmt.Errorf("unknown command %q: shell-operator's; here use %s", name, use)
	}
	return err
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// NewRootCommand returns the root command with every subcommand attached.
// lookupEnv reads environment variables (os.LookupEnv outside tests).
func NewRootCommand(stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) *cobra.Command {
	var (
		level, format string
		noTime        bool
		log           = logrus.New()
	)
	root := &cobra.Command{
		Use:   "hook-operator",
		Short: "Run executable hooks as a Kubernetes operator",
		Long: `hook-operator watches Kubernetes objects, writes each event's binding context
to a file, runs the hook executables found in a folder, and applies the object
operations the hooks write back. Hooks written for shell-operator run unchanged.

A flag whose help names an environment variable ("env ...") can also be
set by it; a flag given on the command line wins over the variable.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := envflag.Apply(cmd.Flags(), lookupEnv); err != nil {
				return err
			}
			if err := logging.Configure(log, level, format, noTime, stderr); err != nil {
				return fmt.Errorf("--log-level/--log-format (or %s/%s): %w", EnvLogLevel, EnvLogFormat, err)
			}
			logging.RouteKlog(log)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	envflag.Define(root.PersistentFlags(), LogSettings(&level, &format, &noTime)...)
	root.AddCommand(version.New(stdout))
	root.AddCommand(hooks.New(stdout, stderr))
	root.AddCommand(start.New(stdout, log))
	root.AddCommand(finalizers.New(stdout, log))
	root.AddCommand(record.New(stdout, log))
	root.AddCommand(replay.New(stdout, log))
	root.AddCommand(debug.New(stdout))
	root.AddCommand(trigger.New(stdout))
	root.AddCommand(rbaccmd.New(stdout, log))
	root.AddCommand(hooktest.New(stdout, log))
	return root
}

// LogSettings is the table of the log flags every command takes, stored
// in level, format and noTime.
func LogSettings(level, format *string, noTime *bool) []envflag.Setting {
	return []envflag.Setting{
		{Name: "log-level", Value: envflag.String(level, "info"), Usage: "log level: trace, debug, info, warn or error",
			Doc: "`trace`, `debug`, `info`, `warn`, `error`", Shell: envflag.Shell{Flag: "log-level", Env: []string{"LOG_LEVEL"}}},
		{Name: "log-format", Value: envflag.String(format, "text"), Usage: "log format: text or json",
			Doc: "`text` or `json`", Shell: envflag.Shell{Flag: "log-type", Env: []string{"LOG_TYPE"}, Convert: logType, Note: "`color` means `text`"}},
		{Name: "log-no-time", Value: envflag.Bool(noTime, false), Usage: "leave the time out of log lines (for a log collector that adds its own)",
			Shell: envflag.Shell{Flag: "log-no-time", Env: []string{"LOG_NO_TIME"}}},
	}
}

// logType turns shell-operator's log type (json, text or color) into a
// --log-format: color is text.
func logType(v string) (string, error) {
	switch strings.ToLower(v) {
	case "json":
		return "json", nil
	case "text", "color":
		return "text", nil
	}
	return "", fmt.Errorf("log type %q: use json, text or color", v)
}
