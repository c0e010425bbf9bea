package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
)

// The environment variables the runtime sets for a run.
const (
	// EnvBindingContextPath names the file holding the binding contexts.
	EnvBindingContextPath = "BINDING_CONTEXT_PATH"
	// EnvKubernetesPatchPath names the file the operations are written to.
	EnvKubernetesPatchPath = "KUBERNETES_PATCH_PATH"
)

// Context is what a handler gets for one run: why the hook runs, a place to
// put the operations it wants applied, and a logger.
type Context struct {
	// Contexts are the binding contexts of this run, oldest first. The
	// runtime merges the contexts that wait for the same hook in the same
	// queue into one run, so there may be several; a hook that recomputes
	// everything from snapshots needs only the last one.
	Contexts []BindingContext
	// Log writes JSON lines to stderr, which the runtime merges into its own
	// log records (msg becomes the message, level the level, other
	// attributes fields), labelled with the hook, binding and queue. A
	// Context made by hand, in a test of a handler, needs one too, such as
	// slog.New(slog.DiscardHandler).
	Log *slog.Logger

	ops []Operation
}

// Emit adds operations to apply when the handler returns nil. They are
// applied in the order emitted; if the handler returns an error, none is.
func (c *Context) Emit(ops ...Operation) {
	c.ops = append(c.ops, ops...)
}

// Operations returns the operations emitted so far.
func (c *Context) Operations() []Operation {
	return c.ops
}

// Handler handles one run. Returning an error fails the run: nothing is
// applied, the error is logged, and the runtime retries the run with backoff
// (unless the binding has allowFailure).
type Handler func(ctx *Context) error

// Run is a Go hook's main function: `func main() { sdk.Run(config, handle) }`.
// Called with --config, it prints cfg as JSON; called with no arguments, as
// the runtime runs a hook, it reads the binding contexts, calls handler, and
// writes the operations it emitted. It exits the process with Handle's code.
//
// When the runtime starts the hook as a resident hook (Settings.Resident,
// $HOOK_OPERATOR_RESIDENT=1), Run serves one run per request instead, each
// exactly like a one-shot run, until the runtime closes the request pipe;
// then it exits 0. Before each run it sets the run's variables
// ($BINDING_CONTEXT_PATH ...) in the process environment, so code that reads
// them directly works unchanged.
func Run(cfg Config, handler Handler) {
	if residentRequested(os.Args[1:], os.Getenv) {
		os.Exit(serveResident(handler, os.Getenv, os.Stderr))
	}
	os.Exit(Handle(cfg, handler, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Handle is Run without the process: args are the arguments after the
// program name, env looks up environment variables, and the exit code is
// returned. Tests call it with a temporary BINDING_CONTEXT_PATH and
// KUBERNETES_PATCH_PATH.
//
// The exit code is 0 on success; 1 when the handler returns an error,
// panics, or the files cannot be read or written (the reason goes to
// stderr, and no operation is written); 2 for unexpected arguments.
func Handle(cfg Config, handler Handler, args []string, env func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && args[0] == "--config":
		data, err := json.Marshal(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "printing the configuration: %v\n", err)
			return 1
		}
		data = append(data, '\n')
		if _, err := stdout.Write(data); err != nil {
			fmt.Fprintf(stderr, "printing the configuration: %v\n", err)
			return 1
		}
		return 0
	case len(args) > 0:
		fmt.Fprintf(stderr, "unexpected arguments %q: a hook is run with --config to print its configuration, or with none to handle the binding contexts in $%s\n",
			args, EnvBindingContextPath)
		return 2
	}
	if err := handle(handler, env, stderr); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return 0
}

func handle(handler Handler, env func(string) string, stderr io.Writer) error {
	contexts, err := readContexts(env(EnvBindingContextPath))
	if err != nil {
		return err
	}
	ctx := &Context{Contexts: contexts, Log: newLogger(stderr)}
	if err := call(handler, ctx); err != nil {
		return fmt.Errorf("hook failed, no operation is applied: %w", err)
	}
	return writeOperations(env(EnvKubernetesPatchPath), ctx.ops)
}

// call runs the handler, turning a panic into an error with its stack, so
// that it is reported like any failure.
func call(handler Handler, ctx *Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return handler(ctx)
}

func readContexts(path string) ([]BindingContext, error) {
	if path == "" {
		return nil, fmt.Errorf("$%s is not set: hook-operator sets it when it runs the hook; to try the hook by hand, write a JSON array of binding contexts to a file and set %s to its path",
			EnvBindingContextPath, EnvBindingContextPath)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the binding contexts: %w", err)
	}
	var contexts []BindingContext
	if err := json.Unmarshal(data, &contexts); err != nil {
		return nil, fmt.Errorf("reading the binding contexts from %s: %w (it must hold a JSON array of binding contexts)", path, err)
	}
	return contexts, nil
}

// writeOperations appends the operations to the file as JSON, one per line.
// Every operation is marshalled before the file is touched, so an invalid
// one writes none.
func writeOperations(path string, ops []Operation) error {
	if len(ops) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for i, op := range ops {
		data, err := op.MarshalJSON() // not json.Marshal, which wraps the error in its own words
		if err != nil {
			return fmt.Errorf("hook failed, no operation is applied: operation %d: %w", i, err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	if path == "" {
		return fmt.Errorf("$%s is not set, so the %d operations cannot be written: hook-operator sets it when it runs the hook", EnvKubernetesPatchPath, len(ops))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("writing the operations: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("writing the operations: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the operations: %w", err)
	}
	return nil
}

// newLogger logs JSON lines without a time: the runtime stamps each line
// as it reads it.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}
