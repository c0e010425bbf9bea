package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Names of the environment variables that carry the file paths (contract
// section 2). The admission name is an alias of the validating one.
const (
	envBindingContext     = "BINDING_CONTEXT_PATH"
	envKubernetesPatch    = "KUBERNETES_PATCH_PATH"
	envMetrics            = "METRICS_PATH"
	envValidatingResponse = "VALIDATING_RESPONSE_PATH"
	envAdmissionResponse  = "ADMISSION_RESPONSE_PATH"
	envConversionResponse = "CONVERSION_RESPONSE_PATH"
	// With tracing on (Request.Trace): the run's W3C trace context, and
	// the file a hook may record spans of its own in.
	envTraceParent = "TRACEPARENT"
	envTraceState  = "TRACESTATE"
	envTraceSpans  = "TRACE_SPANS_PATH"
)

// spansFile is the base name of TRACE_SPANS_PATH in a one-shot run's dir
// (a resident run's adds its token). The operator does not create it:
// the hook does, when it records a span.
const spansFile = "trace-spans"

// MaxSpansBytes is the most the operator reads from TRACE_SPANS_PATH.
const MaxSpansBytes = 1 << 20

// runDirPrefix starts the name of every run dir.
const runDirPrefix = "hook-run-"

// runDir is the private temp dir of one run at a time and the files in it.
//
// A run is on the path of every event, so an output file the hook left
// empty is only stat'ed, not opened, and the dir is removed file by file
// rather than listed.
type runDir struct {
	path                                             string
	contexts, patch, metrics, validating, conversion string
	// spans is TRACE_SPANS_PATH, "" when tracing is off.
	spans string
}

// newRunDir creates a 0700 dir under parent ("" = os.TempDir()) holding the
// binding contexts and empty output files, all 0600.
func newRunDir(parent string, contexts func(io.Writer) error) (*runDir, error) {
	path, err := os.MkdirTemp(parent, runDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the run's temp dir: %w", err)
	}
	d := &runDir{
		path:       path,
		contexts:   filepath.Join(path, "binding-context.json"),
		patch:      filepath.Join(path, "kubernetes-patch"),
		metrics:    filepath.Join(path, "metrics"),
		validating: filepath.Join(path, "validating-response"),
		conversion: filepath.Join(path, "conversion-response"),
	}
	for _, name := range []string{d.patch, d.metrics, d.validating, d.conversion} {
		if err := createFile(name, nil); err != nil {
			_ = d.remove()
			return nil, fmt.Errorf("preparing the run's files: %w", err)
		}
	}
	if err := d.writeContexts(contexts); err != nil {
		_ = d.remove()
		return nil, fmt.Errorf("preparing the run's files: %w", err)
	}
	return d, nil
}

// writeContexts writes the binding contexts file of d, which must not
// exist, 0600, with write (Request.contextsWriter).
func (d *runDir) writeContexts(write func(io.Writer) error) error {
	f, err := os.OpenFile(d.contexts, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// createFile creates name, which must not exist, 0600, holding content.
func createFile(name string, content []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if len(content) > 0 {
		if _, err := f.Write(content); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// env returns base without any variables of the contract's names (nor
// the trace's: an operator started by a traced process must not hand its
// own on), plus those variables pointing into d, and tr's when set.
func (d *runDir) env(base []string, tr *Trace) []string {
	own := map[string]string{
		envBindingContext:     d.contexts,
		envKubernetesPatch:    d.patch,
		envMetrics:            d.metrics,
		envValidatingResponse: d.validating,
		envAdmissionResponse:  d.validating,
		envConversionResponse: d.conversion,
		envTraceParent:        "",
		envTraceState:         "",
		envTraceSpans:         "",
	}
	env := make([]string, 0, len(base)+len(own))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := own[name]; !ok {
			env = append(env, kv)
		}
	}
	for _, name := range []string{envBindingContext, envKubernetesPatch, envMetrics, envValidatingResponse, envAdmissionResponse, envConversionResponse} {
		env = append(env, name+"="+own[name])
	}
	if tr != nil {
		env = append(env, envTraceParent+"="+tr.Parent, envTraceSpans+"="+d.spans)
		if tr.State != "" {
			env = append(env, envTraceState+"="+tr.State)
		}
	}
	return env
}

// readSpans reads, then removes, the spans the hook recorded, when
// tracing is on: the file goes whether the run succeeded or not, so that
// a dir kept for a later run (ReuseDirs) holds only the contract's
// files.
func (d *runDir) readSpans(res *Result) {
	if d.spans == "" {
		return
	}
	if _, err := os.Lstat(d.spans); errors.Is(err, fs.ErrNotExist) {
		return // the hook recorded no span: the common case, one syscall
	}
	res.Spans, res.SpansErr = readOutput(d.spans, envTraceSpans, MaxSpansBytes)
	var tooLarge *OutputTooLargeError
	if errors.As(res.SpansErr, &tooLarge) {
		res.SpansErr = fmt.Errorf("$%s holds more than the %s the operator reads of it; record fewer spans (at most 1,000 a run)", envTraceSpans, limit.Size(MaxSpansBytes))
	}
	if err := os.Remove(d.spans); err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.SpansErr = errors.Join(res.SpansErr, err)
	}
}

// readOutputs fills res from the output files, each at most max bytes. A
// file the hook removed counts as empty; so does anything that is not a
// regular file (a FIFO left in place of an output would otherwise block
// the read).
func (d *runDir) readOutputs(res *Result, max int64) error {
	for _, out := range []struct {
		path, env string
		dst       *[]byte
	}{
		{d.patch, envKubernetesPatch, &res.Operations},
		{d.metrics, envMetrics, &res.Metrics},
		{d.validating, envValidatingResponse, &res.ValidatingResponse},
		{d.conversion, envConversionResponse, &res.ConversionResponse},
	} {
		b, err := readOutput(out.path, out.env, max)
		if err != nil {
			return err
		}
		*out.dst = b
	}
	return nil
}

// readOutput reads one output file, nil when it is missing, empty or not a
// regular file. The size is checked before reading, so that a sparse file
// of 64 GiB is refused without a byte read, and while reading, so that a
// file that a process of the hook still writes to is cut off at max.
func readOutput(path, env string, max int64) ([]byte, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading $%s: %w", env, err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return nil, nil
	}
	if st.Size() > max {
		return nil, &OutputTooLargeError{Env: env, Size: st.Size(), Limit: max}
	}
	// Non-blocking, in case a process the hook left running put a FIFO in
	// the file's place since the stat.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading $%s: %w", env, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	b, err := readAtMost(f, st.Size(), max)
	if errors.Is(err, errOverLimit) {
		return nil, &OutputTooLargeError{Env: env, Size: int64(len(b)), Limit: max, Growing: true}
	}
	if err != nil {
		return nil, fmt.Errorf("reading $%s: %w", env, err)
	}
	return b, nil
}

var errOverLimit = errors.New("over the limit")

// readAtMost reads r to its end, expecting about size bytes; when r holds
// more than max, it stops after max+1 and returns errOverLimit.
func readAtMost(r io.Reader, size, max int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(size, max)+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(r, max+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return buf.Bytes(), errOverLimit
	}
	return buf.Bytes(), nil
}

// OutputTooLargeError says that a hook wrote more to an output file than
// the operator reads.
type OutputTooLargeError struct {
	// Env names the file: KUBERNETES_PATCH_PATH, METRICS_PATH, ...
	Env string
	// Size is the file's size; with Growing, how much was read before the
	// limit stopped the read.
	Size, Limit int64
	// Growing means the file was under the limit when the run ended, and
	// grew past it while it was read.
	Growing bool
}

func (e *OutputTooLargeError) Error() string {
	size := "is " + limit.Size(e.Size)
	if e.Growing {
		size = "grew past " + limit.Size(e.Limit) + " while it was read (a process the hook left running still writes to it)"
	}
	return fmt.Sprintf("the file $%s (%s) %s, over the limit of %s on what the operator reads from a hook's file; "+
		"write less to it (split the work over several runs), or raise the limit with start's --max-hook-output",
		e.Env, outputMeaning[e.Env], size, limit.Size(e.Limit))
}

// outputMeaning says what each output file holds, for errors.
var outputMeaning = map[string]string{
	envKubernetesPatch:    "the operations",
	envMetrics:            "the metrics",
	envValidatingResponse: "the admission response",
	envConversionResponse: "the conversion response",
}

// remove removes the dir: the run's own files one by one, then the dir,
// and whatever else the hook left in it only when there is anything.
func (d *runDir) remove() error {
	for _, name := range []string{d.contexts, d.patch, d.metrics, d.validating, d.conversion, d.spans} {
		if name == "" {
			continue
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return os.RemoveAll(d.path) // e.g. the hook made a dir of that name
		}
	}
	if err := os.Remove(d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(d.path)
	}
	return nil
}
