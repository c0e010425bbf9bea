// Package run runs one hook process: it writes the binding contexts to a
// private temp dir, starts the hook with the contract's environment, logs its
// output line by line, enforces the timeout and, when the hook succeeds,
// returns what it wrote to its output files.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/limit"
)

// Defaults used when the Runner field is zero.
const (
	DefaultTimeout      = 10 * time.Minute
	DefaultKillGrace    = 5 * time.Second
	DefaultOutputGrace  = time.Second
	DefaultMaxLineBytes = 64 << 10
	// DefaultMaxOutputBytes bounds each output file.
	DefaultMaxOutputBytes = limit.DefaultHookOutput
)

// Request is one run of one hook.
type Request struct {
	Hook *hook.Hook
	// Contexts is the JSON array written to BINDING_CONTEXT_PATH; empty
	// means "[]".
	Contexts []byte
	// WriteContexts, when set, writes the contexts to that file instead of
	// Contexts (binding.Write): a Synchronization of many objects is then
	// never held in memory whole.
	WriteContexts func(io.Writer) error
	// Binding and Queue only label the log lines of the run.
	Binding string
	Queue   string
	// Timeout ends the run; zero means the hook's settings.timeout, then
	// Runner.DefaultTimeout.
	Timeout time.Duration
	// Deadline, when set, lets the caller move the run's deadline while it
	// runs (Deadline.Reset); nil: the timeout stays as it started.
	Deadline *Deadline
	// Within, when set, bounds the whole run instead: the hook's time, the
	// SIGTERM grace, the kill and the output grace all fit in it (an
	// admission hook's answer must reach the API server before it gives
	// up). The graces are cut to fit (Limits), and Timeout is ignored.
	Within time.Duration
	// Trace, when set (tracing is on), is the trace context the hook gets
	// (TRACEPARENT, TRACESTATE), with a file for spans of its own
	// (TRACE_SPANS_PATH, read into Result.Spans).
	Trace *Trace
}

// Trace is the W3C trace context of a run.
type Trace struct {
	Parent, State string
}

// contextsWriter returns what writes the request's contexts file.
func (req Request) contextsWriter() func(io.Writer) error {
	if req.WriteContexts != nil {
		return req.WriteContexts
	}
	contexts := req.Contexts
	if len(contexts) == 0 {
		contexts = []byte("[]")
	}
	return func(w io.Writer) error {
		_, err := w.Write(contexts)
		return err
	}
}

// Limits are the three spans a run may last, one after the other: the
// hook's time, then, after SIGTERM to its group, the kill grace, then, once
// it exited, the output grace.
type Limits struct {
	Timeout, KillGrace, OutputGrace time.Duration
}

// Limits returns the spans of a run of req: with req.Within, the kill
// grace is cut to at most a tenth of it and the output grace to at most a
// twentieth, and the hook has the rest, so that the three add up to
// Within.
func (r *Runner) Limits(req Request) Limits {
	l := Limits{Timeout: r.timeout(req), KillGrace: r.killGrace(), OutputGrace: r.outputGrace()}
	if req.Within > 0 {
		l.KillGrace = min(l.KillGrace, req.Within/10)
		l.OutputGrace = min(l.OutputGrace, req.Within/20)
		l.Timeout = req.Within - l.KillGrace - l.OutputGrace
	}
	return l
}

// Result is what a run produced. The output files are read only when the
// hook exited 0; the other fields are set whenever the process ran.
type Result struct {
	// Operations is the content of KUBERNETES_PATCH_PATH (may be empty).
	Operations []byte
	// Metrics is the content of METRICS_PATH.
	Metrics []byte
	// ValidatingResponse is the content of VALIDATING_RESPONSE_PATH, which
	// is the same file as ADMISSION_RESPONSE_PATH.
	ValidatingResponse []byte
	// ConversionResponse is the content of CONVERSION_RESPONSE_PATH.
	ConversionResponse []byte

	Duration time.Duration
	// UserCPU, SystemCPU and MaxRSS (bytes) cover the hook and the children
	// it waited for.
	UserCPU, SystemCPU time.Duration
	MaxRSS             int64
	// StderrTail holds the last lines of stderr, for error messages and
	// Events.
	StderrTail string
	// Spans is what the hook wrote to TRACE_SPANS_PATH (Request.Trace),
	// read whether the run succeeded or not, as long as the hook ran;
	// SpansErr says why it could not be read (too large). Neither fails
	// the run.
	Spans    []byte
	SpansErr error
}

// Runner runs hook processes. The zero value is usable; a Runner is safe for
// concurrent use.
type Runner struct {
	// TmpDir is where the Runner makes its own dir, which holds the
	// per-run temp dirs (home.go); empty means os.TempDir().
	TmpDir string
	// Env is the base environment of every hook; nil means os.Environ().
	Env []string
	// DefaultTimeout applies when neither the request nor the hook sets one;
	// zero means DefaultTimeout.
	DefaultTimeout time.Duration
	// KillGrace is how long a hook has between SIGTERM and SIGKILL after a
	// timeout or cancellation; zero means DefaultKillGrace.
	KillGrace time.Duration
	// OutputGrace is how long output is still read after the hook exited,
	// when a process it left behind keeps stdout or stderr open; zero means
	// DefaultOutputGrace.
	OutputGrace time.Duration
	// MaxLineBytes cuts longer output lines; zero means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxOutputBytes is the most the operator reads from one output file:
	// a run whose hook wrote more fails with an *OutputTooLargeError. Zero
	// means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Log receives the hook's output lines; nil means the standard logger.
	Log logrus.FieldLogger
	// ReuseDirs keeps a run's temp dir, its files emptied, for a later
	// run, instead of creating and removing one per run: when no process
	// that may be the run's is left (which only a child subreaper can
	// tell: Subreap) and the hook changed nothing in the dir but the
	// files' content. Close removes the dirs kept.
	ReuseDirs bool
	// Processes, when set, learns of every hook process started, and of
	// resident processes replaced (metrics).
	Processes ProcessObserver

	pool      dirPool
	residents residents
	home      home
}

// devNull is every hook's stdin, opened once per process.
var (
	devNull     *os.File
	devNullErr  error
	devNullOnce sync.Once
)

// Run runs req.Hook once and waits for it and its output to finish. A
// non-nil error means the run failed: the hook could not start, exited
// non-zero, was killed by a signal, timed out (the error wraps
// context.DeadlineExceeded) or ctx ended (it wraps ctx's error). Before
// Run returns, whatever the hook started is killed (docs/guarantees.md
// says how far that reaches), and the run's temp dir is removed, or, with
// ReuseDirs, emptied and kept for a later run.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	h := req.Hook
	if h == nil {
		return Result{}, errors.New("run: request without hook")
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("hook %s: not started: %w", h.Name, err)
	}
	log := r.logger().WithFields(logrus.Fields{"hook": h.Name, "binding": req.Binding, "queue": req.Queue})
	stdout := newLineWriter(log.WithField("output", "stdout"), r.maxLineBytes(), 0)
	stderr := newLineWriter(log.WithField("output", "stderr"), r.maxLineBytes(), stderrTailLines)
	if h.Config.Settings.Resident {
		if residentSupported {
			return r.runResident(ctx, req, log, stdout, stderr)
		}
		r.residents.warnOneShot(h.Name, log)
	}
	dir, err := r.takeDir(req.contextsWriter())
	if err != nil {
		return Result{}, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	if req.Trace != nil {
		dir.spans = dir.path + string(filepath.Separator) + spansFile
	}
	reusable := false // whether nothing of the run is left to write to dir
	defer func() {
		if err := r.releaseDir(dir, reusable); err != nil {
			log.WithError(err).Warn("removing the hook's temp dir")
		}
	}()

	limits := r.Limits(req)
	deadline := req.Deadline
	if deadline == nil {
		deadline = &Deadline{}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline.arm(limits.Timeout, cancel)
	defer deadline.stop()
	p, err := newProcess(runCtx, h, dir.env(r.baseEnv(), req.Trace), limits, stdout, stderr)
	if err != nil {
		return Result{}, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	cmd := p.cmd

	start := time.Now()
	if err := startHook(cmd); err != nil {
		return Result{}, fmt.Errorf("hook %s: start: %w", h.Name, err)
	}
	pid := cmd.Process.Pid
	r.processes().ProcessStarted(h.Name)
	log.WithField("pid", pid).Debug("hook started")
	// Whatever the run's end (success, failure, timeout), nothing the hook
	// started outlives it. Killed while the hook is a zombie not yet
	// reaped, so that its pid still names its group, and a leftover
	// holding stdout does not keep Wait for the output grace.
	exited := awaitExit(pid)
	if exited {
		reusable = killLeftovers(pid)
	}
	waitErr := cmd.Wait()
	untrackHook(pid)
	if !exited {
		reusable = killLeftovers(pid)
	}
	signalled := p.signalled.Load()

	var res Result
	res.Duration = time.Since(start)
	stdout.flush()
	stderr.flush()
	res.StderrTail = stderr.tail()
	setUsage(&res, cmd.ProcessState)
	dir.readSpans(&res)
	log.WithFields(logrus.Fields{"duration": res.Duration, "exit": cmd.ProcessState.String()}).Debug("hook finished")

	switch {
	case signalled && ctx.Err() != nil:
		return res, fmt.Errorf("hook %s: cancelled: %w", h.Name, ctx.Err())
	case signalled:
		return res, fmt.Errorf("hook %s: timed out after %s: %w", h.Name, deadline.Timeout(), context.DeadlineExceeded)
	case errors.Is(waitErr, exec.ErrWaitDelay):
		log.Warn("hook exited 0 but a process it started still holds stdout or stderr; its output is no longer logged")
	case waitErr != nil:
		return res, exitError(h.Name, cmd.ProcessState, waitErr, res.StderrTail)
	}
	if err := dir.readOutputs(&res, r.maxOutputBytes()); err != nil {
		return res, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	return res, nil
}

func (r *Runner) timeout(req Request) time.Duration {
	switch {
	case req.Timeout > 0:
		return req.Timeout
	case req.Hook.Config.Settings.Timeout > 0:
		return req.Hook.Config.Settings.Timeout
	case r.DefaultTimeout > 0:
		return r.DefaultTimeout
	}
	return DefaultTimeout
}

func (r *Runner) killGrace() time.Duration {
	if r.KillGrace > 0 {
		return r.KillGrace
	}
	return DefaultKillGrace
}

func (r *Runner) outputGrace() time.Duration {
	if r.OutputGrace > 0 {
		return r.OutputGrace
	}
	return DefaultOutputGrace
}

func (r *Runner) maxOutputBytes() int64 {
	if r.MaxOutputBytes > 0 {
		return r.MaxOutputBytes
	}
	return DefaultMaxOutputBytes
}

func (r *Runner) maxLineBytes() int {
	if r.MaxLineBytes > 0 {
		return r.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

// hookStdin returns /dev/null, opened on first use and kept for every Runner:
// os/exec would open it anew for every run.
func hookStdin() (*os.File, error) {
	devNullOnce.Do(func() {
		devNull, devNullErr = os.Open(os.DevNull)
	})
	if devNullErr != nil {
		return nil, fmt.Errorf("opening the hooks' stdin: %w", devNullErr)
	}
	return devNull, nil
}

func (r *Runner) baseEnv() []string {
	if r.Env == nil {
		return os.Environ()
	}
	return r.Env
}

// ProcessObserver learns of hook processes: *metrics.Metrics counts them.
type ProcessObserver interface {
	// ProcessStarted: a process of hook started (one-shot or resident).
	ProcessStarted(hook string)
	// ProcessRestarted: a resident process was replaced after a fault in
	// a run; reason is crashed, timeout or protocol.
	ProcessRestarted(hook, reason string)
	// ProcessRecycled: a resident process was stopped to be replaced;
	// reason is runs, memory, changed or reload.
	ProcessRecycled(hook, reason string)
}

type noObserver struct{}

func (noObserver) ProcessStarted(string)           {}
func (noObserver) ProcessRestarted(string, string) {}
func (noObserver) ProcessRecycled(string, string)  {}

func (r *Runner) processes() ProcessObserver {
	if r.Processes == nil {
		return noObserver{}
	}
	return r.Processes
}

func (r *Runner) logger() logrus.FieldLogger {
	if r.Log == nil {
		return logrus.StandardLogger()
	}
	return r.Log
}
