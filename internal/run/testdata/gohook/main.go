// Command gohook is a hook written in Go, built by the run package's tests.
// It reports what it saw (arguments, cwd, file modes, binding contexts) in
// KUBERNETES_PATCH_PATH and writes the other output files. A context with
// binding "fail" makes it write an operation, complain on stderr and exit 7.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var contexts []struct {
		Binding string `json:"binding"`
	}
	raw, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	check(err)
	check(json.Unmarshal(raw, &contexts))

	if len(contexts) > 0 && contexts[0].Binding == "fail" {
		check(os.WriteFile(os.Getenv("KUBERNETES_PATCH_PATH"), []byte(`{"operation":"Delete"}`), 0o600))
		fmt.Fprintln(os.Stderr, "go hook: cannot reach the database")
		os.Exit(7)
	}

	// Touch 32 MiB so the run's MaxRSS is clearly above the runtime's own.
	mem := make([]byte, 32<<20)
	for i := range mem {
		if i%4096 == 0 {
			mem[i] = 1
		}
	}

	cwd, err := os.Getwd()
	check(err)
	dir := filepath.Dir(os.Getenv("BINDING_CONTEXT_PATH"))
	report := map[string]any{
		"args":          len(os.Args) - 1,
		"cwd":           cwd,
		"runDir":        dir,
		"runDirMode":    mode(dir),
		"contextMode":   mode(os.Getenv("BINDING_CONTEXT_PATH")),
		"sameDir":       sameDir(dir),
		"admissionSame": os.Getenv("ADMISSION_RESPONSE_PATH") == os.Getenv("VALIDATING_RESPONSE_PATH"),
		"bindings":      len(contexts),
		"touched":       mem[4096],
	}
	out, err := json.Marshal(report)
	check(err)
	check(os.WriteFile(os.Getenv("KUBERNETES_PATCH_PATH"), out, 0o600))
	check(os.WriteFile(os.Getenv("METRICS_PATH"), []byte(`{"name":"go_hook_runs","action":"add","value":1}`+"\n"), 0o600))
	check(os.WriteFile(os.Getenv("VALIDATING_RESPONSE_PATH"), []byte(`{"allowed":true}`), 0o600))
	check(os.WriteFile(os.Getenv("CONVERSION_RESPONSE_PATH"), []byte(`{"convertedObjects":[]}`), 0o600))

	fmt.Printf(`{"msg":"go hook done","level":"debug","bindings":%d,"queue":"spoofed"}`+"\n", len(contexts))
	fmt.Fprintln(os.Stderr, "go hook: plain stderr line")
}

func mode(path string) string {
	fi, err := os.Stat(path)
	check(err)
	return fmt.Sprintf("%o", fi.Mode().Perm())
}

// sameDir reports whether every output file is an existing, empty file in dir
// (the hook checks before writing any).
func sameDir(dir string) bool {
	for _, name := range []string{"KUBERNETES_PATCH_PATH", "METRICS_PATH", "VALIDATING_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH"} {
		p := os.Getenv(name)
		fi, err := os.Stat(p)
		if err != nil || filepath.Dir(p) != dir || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
			return false
		}
	}
	return true
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
