// Command residenthook is a resident hook for the integration tests,
// written with the standard library only to the protocol in docs/running.md.
// It watches the ConfigMaps of namespace $RESIDENT_NS with label
// resident=yes, appends its pid to $RESIDENT_MARKS/starts when it starts and
// "name pid" to records for each Event, and acts on a ConfigMap's data.mode:
// "block" waits (the first time) until the test kills it, "hang" sleeps
// (the first time) past its timeout, "slow" takes 2 seconds, "leak" keeps
// 64 MiB more. It writes its pid to eof when fd 3 ends, then exits. The
// file $RESIDENT_SETTINGS, when set, holds more settings for --config
// (",\"residentMaxRuns\":3").
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	marks := os.Getenv("RESIDENT_MARKS")
	if len(os.Args) > 1 && os.Args[1] == "--config" {
		var extra []byte
		if path := os.Getenv("RESIDENT_SETTINGS"); path != "" {
			extra, _ = os.ReadFile(path)
		}
		fmt.Printf(`{"configVersion":"v1","settings":{"resident":true,"timeout":"3s"%s},"kubernetes":[{"name":"cms","kind":"ConfigMap",`+
			`"executeHookOnSynchronization":false,"labelSelector":{"matchLabels":{"resident":"yes"}},"namespace":{"nameSelector":{"matchNames":[%q]}}}]}`+"\n",
			extra, os.Getenv("RESIDENT_NS"))
		return
	}
	pid := strconv.Itoa(os.Getpid())
	appendLine(filepath.Join(marks, "starts"), pid)
	if os.Getenv("HOOK_OPERATOR_RESIDENT") != "1" {
		if err := run(marks, pid); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	requests := bufio.NewScanner(os.NewFile(3, "requests"))
	replies := os.NewFile(4, "replies")
	for requests.Scan() {
		var req struct {
			ID  string            `json:"id"`
			Env map[string]string `json:"env"`
		}
		code := 0
		if err := json.Unmarshal(requests.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "request:", err)
			code = 1
		}
		for k, v := range req.Env {
			os.Setenv(k, v)
		}
		if err := run(marks, pid); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		fmt.Fprintf(replies, "{\"id\":%q,\"exitCode\":%d}\n", req.ID, code)
	}
	appendLine(filepath.Join(marks, "eof"), pid)
}

// leaked is what the "leak" runs keep.
var leaked [][]byte

// run is one run: the binding contexts at $BINDING_CONTEXT_PATH.
func run(marks, pid string) error {
	data, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	if err != nil {
		return err
	}
	var contexts []struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct{ Name string } `json:"metadata"`
			Data     map[string]string     `json:"data"`
		} `json:"object"`
	}
	if err := json.Unmarshal(data, &contexts); err != nil {
		return err
	}
	for _, c := range contexts {
		if c.Type != "Event" {
			continue
		}
		name := c.Object.Metadata.Name
		switch mode, once := c.Object.Data["mode"], filepath.Join(marks, "once-"+name); {
		case mode == "block" && firstTime(once):
			appendLine(filepath.Join(marks, "blocked"), pid)
			time.Sleep(time.Hour) // until killed
		case mode == "hang" && firstTime(once):
			appendLine(filepath.Join(marks, "hanging"), pid)
			time.Sleep(time.Hour)
		case mode == "leak":
			// A byte a page makes every page resident: the RSS grows by
			// the 64 MiB in a few thousand writes, not 64 million, which
			// on a loaded machine took most of the run's 3s timeout.
			leak := make([]byte, 64<<20)
			for i := 0; i < len(leak); i += os.Getpagesize() {
				leak[i] = 1
			}
			leaked = append(leaked, leak)
		case mode == "slow":
			appendLine(filepath.Join(marks, "slow-started"), pid)
			time.Sleep(2 * time.Second)
			appendLine(filepath.Join(marks, "slow-done"), pid)
		}
		appendLine(filepath.Join(marks, "records"), name+" "+pid)
	}
	return nil
}

// firstTime reports whether path did not exist, and creates it.
func firstTime(path string) bool {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
