// Package replay implements `hook-operator replay`: run hooks without a
// cluster against the objects and events of a fixture, and print what each
// run received, wrote and changed.
package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	hookscmd "github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/replay"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// Flags holds replay's settings.
type Flags struct {
	HooksDir      string
	Objects       string
	Events        string
	Output        string
	ShowSecrets   bool
	MaxRuns       int
	TmpDir        string
	HookTimeout   time.Duration
	ConfigTimeout time.Duration
	// HooksFolder is --hooks-allow-external-symlinks.
	HooksFolder hook.FolderOptions
}

// New returns the replay command.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Run hooks offline against objects and events from files, and print every run",
		Long: `replay runs the hooks under --hooks-dir without a cluster. The objects of
--objects (a file or a folder of YAML or JSON) are the cluster when the operator
starts; --events lists what happens next (objects added, modified or deleted,
schedule ticks, and waits that let Requeue requests fall due).

replay builds the binding contexts the live runtime would build from them: it
runs onStartup hooks, delivers each binding's Synchronization (matching kind,
selectors, namespaces and jqFilter), then the events. Each hook's operations
are validated and applied to an in-memory copy of the objects, so later events
see them, and the changes they make are delivered to the bindings in turn.

For every run it prints, to stdout, the contexts, the operations as the hook
wrote them, and the changes with diffs (docs/testing.md describes the format).
Logs go to stderr. Secret data is masked unless --show-secrets.

Replay is deterministic: contexts run one by one in the order they arise,
time is virtual, and a failed run is printed and not retried. It exits 1 if
any run failed.`,
		Example: `  hook-operator replay --hooks-dir ./hooks --objects ./fixtures/tickets.yaml
  hook-operator replay --hooks-dir ./hooks --objects ./fixtures/ --events ./fixtures/events.yaml -o yaml
  hook-operator record --hooks-dir ./hooks --out rec.yaml --duration 1m && hook-operator replay --hooks-dir ./hooks --objects rec.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, f, stdout, log)
		},
	}
	fs := cmd.Flags()
	hookscmd.BindHooksDir(fs, &f.HooksDir)
	hookscmd.BindConfigTimeout(fs, &f.ConfigTimeout)
	hookscmd.BindFolder(fs, &f.HooksFolder)
	fs.StringVar(&f.Objects, "objects", "", "file or folder of objects (YAML or JSON; a fixture written by record also works)")
	fs.StringVar(&f.Events, "events", "", "file listing the events after start (replaces the events of an --objects fixture)")
	BindOutput(fs, &f.Output, &f.ShowSecrets)
	BindRunFlags(fs, &f.MaxRuns, &f.TmpDir, &f.HookTimeout)
	return cmd
}

// BindOutput adds --output/-o and --show-secrets.
func BindOutput(fs *pflag.FlagSet, output *string, showSecrets *bool) {
	fs.StringVarP(output, "output", "o", "json", "print runs as json (one per line) or yaml (one document each)")
	fs.BoolVar(showSecrets, "show-secrets", false, "print Secret data as it is instead of masking it")
}

// BindRunFlags adds the settings of offline runs.
func BindRunFlags(fs *pflag.FlagSet, maxRuns *int, tmpDir *string, hookTimeout *time.Duration) {
	fs.IntVar(maxRuns, "max-runs", replay.DefaultMaxRuns, "stop when hooks have run this often (hooks that keep triggering each other)")
	fs.StringVar(tmpDir, "tmp-dir", "", "folder of the operator's own dir of per-run private temp dirs (default: the system temp dir)")
	fs.DurationVar(hookTimeout, "hook-timeout", time.Minute, "end a hook run after this long (a hook's settings.timeout wins)")
}

// Run loads the hooks and the fixture, replays, and prints every run.
func Run(ctx context.Context, f Flags, out io.Writer, log *logrus.Logger) error {
	if f.Objects == "" && f.Events == "" {
		return fmt.Errorf("name the objects with --objects FILE|DIR (and the events with --events FILE)")
	}
	w, err := transcript.NewWriter(out, f.Output)
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	fx, err := fixture.Read(f.Objects, f.Events)
	if err != nil {
		return err
	}
	hooks, err := LoadHooks(ctx, f.HooksDir, f.ConfigTimeout, f.HooksFolder, log)
	if err != nil {
		return err
	}
	topts := transcript.Options{ShowSecrets: f.ShowSecrets}
	var writeErr error
	sum, err := replay.Run(ctx, replay.Options{
		Hooks: hooks, Fixture: fx,
		TmpDir: f.TmpDir, Env: os.Environ(), HookTimeout: f.HookTimeout, MaxRuns: f.MaxRuns,
		Log: log,
		Report: func(r executor.Report, changes []memcluster.Change) {
			if err := w.Write(transcript.New(r, transcript.FromMemory(changes, topts), topts)); err != nil && writeErr == nil {
				writeErr = err
			}
		},
	})
	if err != nil {
		return err
	}
	if writeErr != nil {
		return fmt.Errorf("print: %w", writeErr)
	}
	log.WithFields(logrus.Fields{"runs": sum.Runs, "failed": sum.Failed}).Info("replay done")
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d runs failed", sum.Failed, sum.Runs)
	}
	return nil
}

// LoadHooks loads the hooks of dir for an offline command.
func LoadHooks(ctx context.Context, dir string, configTimeout time.Duration, folder hook.FolderOptions, log *logrus.Logger) ([]*hook.Hook, error) {
	hooks, err := hook.Load(ctx, dir, hook.LoadOptions{ConfigTimeout: configTimeout, Folder: folder, Warn: func(m string) { log.Warn(m) }})
	if err != nil {
		return nil, fmt.Errorf("hooks in %s are not valid:\n%w", dir, err)
	}
	if len(hooks) == 0 {
		return nil, fmt.Errorf("no hooks found under %s (set --hooks-dir)", dir)
	}
	return hooks, nil
}
