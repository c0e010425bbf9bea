// Package hooktest implements `hook-operator test`: hook tests for a hook
// author's CI. Each case is a folder of objects and events with the runs it
// is expected to produce; the case passes when replay produces them.
package hooktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	hookscmd "github.com/hook-operator/hook-operator/internal/cli/hooks"
	replaycmd "github.com/hook-operator/hook-operator/internal/cli/replay"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// File names of a case folder.
const (
	// ObjectsFile (or an ObjectsDir folder) holds the objects at start.
	ObjectsFile = "objects.yaml"
	ObjectsDir  = "objects"
	// EventsFile lists the events after start (optional).
	EventsFile = "events.yaml"
	// ExpectedFile holds the expected runs, as `replay -o yaml` prints them.
	ExpectedFile = "expected.yaml"
	// CaseFile (optional) selects the hooks of the case.
	CaseFile = "case.yaml"
)

// Flags holds the test command's settings.
type Flags struct {
	HooksDir string
	Update   bool
	// UpdateFailed lets Update record runs that failed.
	UpdateFailed bool
	Run          string
	ShowSecrets  bool
	// Verbose prints every case's hook output, not only failing cases'.
	Verbose       bool
	MaxRuns       int
	TmpDir        string
	HookTimeout   time.Duration
	ConfigTimeout time.Duration
	// HooksFolder is --hooks-allow-external-symlinks.
	HooksFolder hook.FolderOptions
}

// New returns the test command.
func New(stdout io.Writer, log *logrus.Logger) *cobra.Command {
	var f Flags
	cmd := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run hook test cases offline and compare the runs with the expected ones",
		Long: `test finds every case folder under DIR (default "tests"): a folder holding
objects.yaml (or an objects/ folder), events.yaml, expected.yaml or case.yaml.
For each case it replays the hooks under --hooks-dir against the case's
objects and events, without a cluster, exactly as "hook-operator replay" does,
and compares the runs with expected.yaml. A case.yaml with "hooks: [PATH, ...]"
limits the case to those hooks, so that one hooks folder can hold several
operators, each with its own cases.

expected.yaml holds the runs as "replay -o yaml" prints them. A field left out
of an expected run is not compared: delete "contexts" to check only the
operations and changes, for example. --update writes every case's
expected.yaml from what the hooks do now; review the diff before committing.
A case where a run failed is not written but reported as failing, so that a
broken hook is not recorded as the expected result; --update-failed writes it
too, for a case that tests a failure.

Each case prints PASS or FAIL, and a failing case prints a diff of expected
against actual runs, followed by what its hooks logged (their stdout and
stderr lines, and the runtime's messages about the case). As with "go test",
a passing case's hook output is not shown; -v shows it for every case. test
exits 1 if any case failed.`,
		Example: `  hook-operator test --hooks-dir ./hooks ./tests
  hook-operator test --hooks-dir ./hooks ./tests --run flight --update
  hook-operator test --hooks-dir ./hooks ./tests --run rejects-bad-spec --update --update-failed`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "tests"
			if len(args) == 1 {
				dir = args[0]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, dir, f, stdout, log)
		},
	}
	fs := cmd.Flags()
	hookscmd.BindHooksDir(fs, &f.HooksDir)
	hookscmd.BindConfigTimeout(fs, &f.ConfigTimeout)
	hookscmd.BindFolder(fs, &f.HooksFolder)
	fs.BoolVar(&f.Update, "update", false, "write each case's expected.yaml from the actual runs (not when a run failed)")
	fs.BoolVar(&f.UpdateFailed, "update-failed", false, "with --update, also write a case whose runs failed, their errors as expected")
	fs.StringVar(&f.Run, "run", "", "only cases whose path under DIR matches this regular expression")
	fs.BoolVar(&f.ShowSecrets, "show-secrets", false, "compare and write Secret data as it is instead of masked")
	fs.BoolVarP(&f.Verbose, "verbose", "v", false, "show every case's hook output, also of cases that pass")
	replaycmd.BindRunFlags(fs, &f.MaxRuns, &f.TmpDir, &f.HookTimeout)
	return cmd
}

// ErrFailed is returned when a case failed.
var ErrFailed = errors.New("hook tests failed")

// Run runs every case under dir.
func Run(ctx context.Context, dir string, f Flags, out io.Writer, log *logrus.Logger) error {
	var filter *regexp.Regexp
	if f.Run != "" {
		re, err := regexp.Compile(f.Run)
		if err != nil {
			return fmt.Errorf("--run: %w", err)
		}
		filter = re
	}
	cases, err := Find(dir)
	if err != nil {
		return err
	}
	hooks, err := replaycmd.LoadHooks(ctx, f.HooksDir, f.ConfigTimeout, f.HooksFolder, log)
	if err != nil {
		return err
	}
	passed, failed := 0, 0
	for _, c := range cases {
		name, _ := filepath.Rel(dir, c)
		if name == "." {
			name = filepath.Base(c)
		}
		if filter != nil && !filter.MatchString(name) {
			continue
		}
		start := time.Now()
		caseLog, output := caseLogger(log)
		res := runCase(ctx, c, hooks, f, caseLog)
		took := time.Since(start).Round(time.Millisecond)
		caseFailed := res.err != nil || (!res.updated && res.diff != "")
		switch {
		case res.err != nil:
			failed++
			fmt.Fprintf(out, "FAIL %s (%s)\n%s", name, took, indent(res.err.Error(), "    "))
		case res.updated:
			passed++
			fmt.Fprintf(out, "UPDATED %s: %d runs written to %s (%s)\n", name, res.runs, ExpectedFile, took)
		case res.diff != "":
			failed++
			fmt.Fprintf(out, "FAIL %s: the runs differ from %s (%s)\n%s", name, ExpectedFile, took, indent(res.diff, "    "))
		default:
			passed++
			fmt.Fprintf(out, "PASS %s (%d runs, %s)\n", name, res.runs, took)
		}
		if (caseFailed || f.Verbose) && output.Len() > 0 {
			fmt.Fprintf(out, "    hook output:\n%s", indent(output.String(), "    | "))
		}
	}
	if passed+failed == 0 {
		if filter != nil {
			return fmt.Errorf("no case under %s matches --run %q", dir, f.Run)
		}
		return fmt.Errorf("no test cases under %s: a case is a folder with %s (or %s/), %s, %s or %s", dir, ObjectsFile, ObjectsDir, EventsFile, ExpectedFile, CaseFile)
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d cases", ErrFailed, failed, passed+failed)
	}
	return nil
}

// Find returns the case folders under dir, in lexical order.
func Find(dir string) ([]string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("test cases: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("test cases: %s is not a folder", dir)
	}
	var cases []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ObjectsDir && path != dir {
			return filepath.SkipDir // a case's objects, not a case
		}
		for _, n := range []string{ObjectsFile, ObjectsDir, EventsFile, ExpectedFile, CaseFile} {
			if _, err := os.Stat(filepath.Join(path, n)); err == nil {
				cases = append(cases, path)
				break
			}
		}
		return nil
	})
	sort.Strings(cases)
	return cases, err
}

// caseLogger returns a logger like log that writes to a buffer, so that a
// case's hook output is shown only when the case fails (or with -v).
func caseLogger(log *logrus.Logger) (*logrus.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(log.Formatter)
	l.SetLevel(log.GetLevel())
	return l, &buf
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}
