package sdk

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// The environment variables of a resident hook's process (extension; see
// Settings.Resident and docs/running.md, "Resident hooks").
const (
	// EnvResident is "1" when the runtime started the hook to serve runs
	// as requests instead of handling one run.
	EnvResident = "HOOK_OPERATOR_RESIDENT"
	// EnvRequestFD is the file descriptor the requests are read from.
	EnvRequestFD = "HOOK_OPERATOR_REQUEST_FD"
	// EnvReplyFD is the file descriptor the replies are written to.
	EnvReplyFD = "HOOK_OPERATOR_REPLY_FD"
)

// request is one run sent to a resident hook: its id and the per-run
// environment variables a one-shot run gets.
type request struct {
	ID  string            `json:"id"`
	Env map[string]string `json:"env"`
}

// reply ends one run of a resident hook; exitCode means what a one-shot
// run's exit status means.
type reply struct {
	ID       string `json:"id"`
	ExitCode int    `json:"exitCode"`
}

// residentRequested reports whether the runtime started this process as a
// resident hook.
func residentRequested(args []string, env func(string) string) bool {
	return len(args) == 0 && env(EnvResident) == "1"
}

// serveResident opens the two pipes the runtime passed and serves runs on
// them until the request pipe ends; it returns the process's exit code.
func serveResident(handler Handler, env func(string) string, stderr io.Writer) int {
	requests, err := inheritedFile(env, EnvRequestFD, "requests")
	if err != nil {
		fmt.Fprintf(stderr, "resident hook: %v\n", err)
		return 2
	}
	replies, err := inheritedFile(env, EnvReplyFD, "replies")
	if err != nil {
		fmt.Fprintf(stderr, "resident hook: %v\n", err)
		return 2
	}
	return serve(handler, requests, replies, stderr)
}

// inheritedFile is the file descriptor named by the variable, marked
// close-on-exec so that programs the handler starts do not hold the pipe
// open after the hook exits.
func inheritedFile(env func(string) string, name, what string) (*os.File, error) {
	value := env(name)
	fd, err := strconv.Atoi(value)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("$%s is %q: it must name the file descriptor of the %s pipe (3 or more); hook-operator sets it when it starts a resident hook", name, value, what)
	}
	closeOnExec(fd)
	return os.NewFile(uintptr(fd), name), nil
}

// serve reads one request per line, sets its variables in the process
// environment, runs the handler as a one-shot run would, and writes the
// reply. It returns 0 at the end of the requests, and non-zero when a
// request is not understood or the reply cannot be written: the runtime
// then fails the run in flight and starts the hook again.
func serve(handler Handler, requests io.Reader, replies io.Writer, stderr io.Writer) int {
	in := bufio.NewReader(requests)
	var previous map[string]string
	for line := 1; ; line++ {
		data, err := in.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(data) == 0 {
			return 0
		}
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "resident hook: reading request %d: %v\n", line, err)
			return 1
		}
		var req request
		if err := json.Unmarshal(data, &req); err != nil || req.ID == "" {
			fmt.Fprintf(stderr, "resident hook: request %d is not {\"id\":\"...\",\"env\":{...}}: %q\n", line, data)
			return 2
		}
		if err := setRunEnv(previous, req.Env); err != nil {
			fmt.Fprintf(stderr, "resident hook: request %d (run %s): %v\n", line, req.ID, err)
			return 2
		}
		previous = req.Env
		code := 0
		if err := handle(handler, os.Getenv, stderr); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			code = 1
		}
		out, _ := json.Marshal(reply{ID: req.ID, ExitCode: code})
		if _, err := replies.Write(append(out, '\n')); err != nil {
			fmt.Fprintf(stderr, "resident hook: replying to run %s: %v\n", req.ID, err)
			return 1
		}
	}
}

// traceEnv are the variables a request carries only when tracing is on.
var traceEnv = []string{EnvTraceParent, EnvTraceState, EnvTraceSpansPath}

// setRunEnv sets the run's variables and unsets those of the previous run
// that this one does not set, so no path of an earlier run is used again;
// the trace variables too when the request lacks them, so that a run never
// records spans in another run's trace.
func setRunEnv(previous, current map[string]string) error {
	unset := func(k string) error {
		if _, ok := current[k]; ok {
			return nil
		}
		if err := os.Unsetenv(k); err != nil {
			return fmt.Errorf("unsetting $%s: %w", k, err)
		}
		return nil
	}
	for k := range previous {
		if err := unset(k); err != nil {
			return err
		}
	}
	for _, k := range traceEnv {
		if err := unset(k); err != nil {
			return err
		}
	}
	for k, v := range current {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("setting $%s: %w", k, err)
		}
	}
	return nil
}
