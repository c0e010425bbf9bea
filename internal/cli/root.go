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
const (
	EnvLogLevel  = "HOOK_OPERATOR_LOG_LEVEL"
	EnvLogFormat = "HOOK_OPERATOR_LOG_FORMAT"
)

// Execute runs the command line args and returns the process exit code:
// 0 on success, 1 on any error (printed to stderr).
func Execute(args []string, stdout, stderr io.Writer) int {
	cmd := NewRootCommand(stdout, stderr, os.LookupEnv)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(stderr, "hook-operator: %v\n", err)
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
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

Every flag can also be set by the environment variable named in its help;
a flag given on the command line wins over the variable.`,
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
	pf := root.PersistentFlags()
	pf.StringVar(&level, "log-level", "info", "log level: trace, debug, info, warn or error")
	pf.StringVar(&format, "log-format", "text", "log format: text or json")
	envflag.Bind(pf, "log-level", EnvLogLevel)
	envflag.Bind(pf, "log-format", EnvLogFormat)
	pf.BoolVar(&noTime, "log-no-time", false, "leave the time out of log lines (for a log collector that adds its own)")
	envflag.Bind(pf, "log-no-time", "HOOK_OPERATOR_LOG_NO_TIME")
	// shell-operator's settings, so that its manifests work unchanged.
	envflag.BindAlias(pf, "log-level", envflag.Same("LOG_LEVEL"))
	envflag.BindAlias(pf, "log-format", envflag.Alias{Names: []string{"LOG_TYPE"}, Value: logType})
	envflag.BindAlias(pf, "log-no-time", envflag.Same("LOG_NO_TIME"))

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

// logType turns shell-operator's LOG_TYPE (json, text or color) into a
// --log-format: color is text.
func logType(lookup func(string) (string, bool)) (string, bool, error) {
	v, ok := lookup("LOG_TYPE")
	if !ok {
		return "", false, nil
	}
	switch strings.ToLower(v) {
	case "json":
		return "json", true, nil
	case "text", "color":
		return "text", true, nil
	}
	return "", true, fmt.Errorf("LOG_TYPE=%q: use json, text or color", v)
}
