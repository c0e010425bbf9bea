// Command gohook is a hook written in Go for the operator's integration
// tests. With --config it prints config.json from its folder. Otherwise it
// appends its binding contexts (one JSON line per run) to the file named in
// record.path beside it, and for every Event context of a ConfigMap it
// writes a MergePatch that labels the ConfigMap "seen-by-go=<its name>".
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--config" {
		data, err := os.ReadFile("config.json")
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(data)
		return
	}
	data, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	if err != nil {
		fail(err)
	}
	var contexts []struct {
		Type       string `json:"type"`
		WatchEvent string `json:"watchEvent"`
		Object     struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
			} `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(data, &contexts); err != nil {
		fail(err)
	}
	record, err := os.ReadFile("record.path")
	if err != nil {
		fail(err)
	}
	f, err := os.OpenFile(string(record), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	var arr []json.RawMessage
	_ = json.Unmarshal(data, &arr)
	line, _ := json.Marshal(arr)
	fmt.Fprintf(f, "%s\n", line)

	out, err := os.OpenFile(os.Getenv("KUBERNETES_PATCH_PATH"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		fail(err)
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	for _, c := range contexts {
		if c.Type != "Event" || c.WatchEvent == "Deleted" || c.Object.Kind != "ConfigMap" {
			continue
		}
		op := map[string]any{
			"operation": "MergePatch", "kind": "ConfigMap",
			"namespace": c.Object.Metadata.Namespace, "name": c.Object.Metadata.Name,
			"mergePatch": map[string]any{"metadata": map[string]any{"labels": map[string]any{"seen-by-go": c.Object.Metadata.Name}}},
		}
		if err := enc.Encode(op); err != nil {
			fail(err)
		}
	}
	fmt.Println(`{"msg":"go hook done","contexts":` + fmt.Sprint(len(contexts)) + `}`)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gohook:", err)
	os.Exit(1)
}
