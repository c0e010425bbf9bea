// Command bench-go is the benchmark's Go hook (see bench/README.md). It
// does what the bash hook does, without a shell and jq: for each
// Synchronization context it appends "sync <ts> <objects>" to $BENCH_OUT,
// and for each Event context "<ts> <object name>"; <ts> is the hook's own
// start time in nanoseconds. --config prints the file $BENCH_CONFIG, which
// the harness writes for each scenario.
//
// With HOOK_OPERATOR_RESIDENT=1 it is a resident hook (the protocol of
// docs/hooks.md): it stays, reads one request line per run from fd 3, sets
// the run's variables, does the same work, and answers on fd 4; <ts> is then
// the time the request line was read. Installed under a name that starts
// with "sleep" (the parallel scenario), it waits 50 ms per Event context
// and writes the time the wait ended instead.
//
// It uses only the standard library, so that it measures the runtime and a
// Go process start, not a particular SDK.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	ts := time.Now().UnixNano()
	if os.Getenv("HOOK_OPERATOR_RESIDENT") == "1" && (len(os.Args) < 2 || os.Args[1] != "--config") {
		requests, replies := os.NewFile(3, "requests"), os.NewFile(4, "replies")
		if err := serve(requests, replies); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(ts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// request is one run's request line of the resident protocol.
type request struct {
	ID  string            `json:"id"`
	Env map[string]string `json:"env"`
}

// reply is the line that ends a run.
type reply struct {
	ID       string `json:"id"`
	ExitCode int    `json:"exitCode"`
}

// serve is the resident loop: one run per request line, until requests
// ends (the operator closes fd 3 to stop the hook). A run that fails is
// reported with exit code 1 and its error on stderr, as a one-shot run's
// would be; a request that is not JSON ends the loop with an error.
func serve(requests io.Reader, replies io.Writer) error {
	in := bufio.NewReader(requests)
	for {
		line, err := in.ReadBytes('\n')
		ts := time.Now().UnixNano()
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading a request on fd 3: %w", err)
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil || req.ID == "" {
			return fmt.Errorf("request %q on fd 3: want {\"id\":\"<run id>\",\"env\":{...}} (%v)", strings.TrimSpace(string(line)), err)
		}
		for k, v := range req.Env {
			if err := os.Setenv(k, v); err != nil {
				return fmt.Errorf("request %s: env %s: %w", req.ID, k, err)
			}
		}
		code := 0
		if err := run(ts); err != nil {
			fmt.Fprintf(os.Stderr, "run %s: %v\n", req.ID, err)
			code = 1
		}
		out, _ := json.Marshal(reply{ID: req.ID, ExitCode: code})
		if _, err := replies.Write(append(out, '\n')); err != nil {
			return fmt.Errorf("writing the reply on fd 4: %w", err)
		}
	}
}

// bindingContext holds the fields of a binding context the hook reads.
type bindingContext struct {
	Type    string            `json:"type"`
	Objects []json.RawMessage `json:"objects"`
	Object  *struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"object"`
	// FilterResult names the object when the binding keeps no full objects
	// (the harness's ConfigMaps carry their name in data.name).
	FilterResult json.RawMessage `json:"filterResult"`
	// Review is the admission request of a Validating context.
	Review *struct {
		Request struct {
			Name string `json:"name"`
		} `json:"request"`
	} `json:"review"`
}

// admit answers a Validating context: an object named bench-probe is
// denied (the harness probes with it whether the webhook is in place),
// everything else allowed.
func admit(c bindingContext) error {
	answer := `{"allowed": true}`
	if c.Review != nil && c.Review.Request.Name == "bench-probe" {
		answer = `{"allowed": false, "message": "probe"}`
	}
	return os.WriteFile(os.Getenv("VALIDATING_RESPONSE_PATH"), []byte(answer), 0o600)
}

func run(ts int64) error {
	if len(os.Args) > 1 && os.Args[1] == "--config" {
		data, err := os.ReadFile(os.Getenv("BENCH_CONFIG"))
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	data, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	if err != nil {
		return err
	}
	var contexts []bindingContext
	if err := json.Unmarshal(data, &contexts); err != nil {
		return fmt.Errorf("binding contexts: %w", err)
	}
	if len(contexts) == 1 && contexts[0].Type == "Validating" {
		return admit(contexts[0])
	}
	sleeping := strings.HasPrefix(filepath.Base(os.Args[0]), "sleep")
	if sleeping {
		// The parallel scenario: 50 ms of waiting per object, marked when
		// the wait is over (the moment the objects are done).
		events := 0
		for _, c := range contexts {
			if c.Type == "Event" {
				events++
			}
		}
		time.Sleep(time.Duration(events) * 50 * time.Millisecond)
		ts = time.Now().UnixNano()
	}
	stamp := strconv.FormatInt(ts, 10)
	var out bytes.Buffer
	for _, c := range contexts {
		switch c.Type {
		case "Synchronization":
			fmt.Fprintf(&out, "sync %s %d\n", stamp, len(c.Objects))
		case "Event":
			fmt.Fprintf(&out, "%s %s\n", stamp, name(c))
		}
	}
	f, err := os.OpenFile(os.Getenv("BENCH_OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(out.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func name(c bindingContext) string {
	if c.Object != nil {
		return c.Object.Metadata.Name
	}
	// jqFilter .metadata.name (the parallel scenario) gives the name
	// itself; .data an object with it.
	var plain string
	if json.Unmarshal(c.FilterResult, &plain) == nil && plain != "" {
		return plain
	}
	var data struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(c.FilterResult, &data)
	if data.Name == "" {
		return "null"
	}
	return data.Name
}
