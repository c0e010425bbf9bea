// Command bench-go is the benchmark's Go hook (see bench/README.md). It
// does what the bash hook does, without a shell and jq: for each
// Synchronization context it appends "sync <ts> <objects>" to $BENCH_OUT,
// and for each Event context "<ts> <object name>"; <ts> is the hook's own
// start time in nanoseconds. --config prints the file $BENCH_CONFIG, which
// the harness writes for each scenario.
//
// It uses only the standard library, so that it measures the runtime and a
// Go process start, not a particular SDK.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	ts := time.Now().UnixNano()
	if err := run(ts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
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
	var data struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(c.FilterResult, &data)
	if data.Name == "" {
		return "null"
	}
	return data.Name
}
