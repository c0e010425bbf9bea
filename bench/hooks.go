package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// prepareHooks makes one hooks folder per hook kind under tmp, and one for
// the one-shot form of each resident variant (shell-operator runs it): the
// bash hooks copied, the Go hook built. The operator skips *.go files in a
// hooks folder, but the binary must be built; building it here keeps the
// repository clean. The Go hook is one binary for both of its kinds: it is
// resident when the operator starts it so (settings.resident, which the
// harness adds to the configuration of the resident variants).
func prepareHooks(root, tmp string, kinds []string) (map[string]string, error) {
	var all []string
	for _, kind := range kinds {
		for _, k := range []string{kind, oneShot(kind)} {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	dirs := map[string]string{}
	for _, kind := range all {
		dir := filepath.Join(tmp, "hooks-"+kind)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		switch kind {
		case bashHook, bashResidentHook:
			script := map[string]string{bashHook: "hook.sh", bashResidentHook: "resident.sh"}[kind]
			if err := copyHook(filepath.Join(root, "bench", "hooks", "bash", script), filepath.Join(dir, script)); err != nil {
				return nil, err
			}
		case goHook, goResidentHook:
			if err := buildGoHook(root, filepath.Join(dir, "bench-go")); err != nil {
				return nil, err
			}
		}
		dirs[kind] = dir
	}
	return dirs, nil
}

// copyHook copies a hook script to dst, executable.
func copyHook(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// buildGoHook builds bench/hooks/go to out.
func buildGoHook(root, out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./bench/hooks/go")
	cmd.Dir = root
	if data, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./bench/hooks/go: %v\n%s", err, data)
	}
	return nil
}

// withResident returns the hook configuration config with
// settings.resident set to true, keeping the other settings.
func withResident(config []byte) ([]byte, error) {
	var c map[string]any
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, fmt.Errorf("hook configuration: %w", err)
	}
	settings, _ := c["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
	}
	settings["resident"] = true
	c["settings"] = settings
	return json.Marshal(c)
}

// hookConfig is the configuration the benchmark hook prints: one binding
// on the ConfigMaps of namespace with jqFilter .data; keepFull sets
// keepFullObjectsInMemory when not nil (else the default, true, applies).
func hookConfig(namespace string, keepFull *bool) []byte {
	binding := map[string]any{
		"name":      "configmaps",
		"kind":      "ConfigMap",
		"jqFilter":  ".data",
		"namespace": map[string]any{"nameSelector": map[string]any{"matchNames": []string{namespace}}},
	}
	if keepFull != nil {
		binding["keepFullObjectsInMemory"] = *keepFull
	}
	data, _ := json.Marshal(map[string]any{"configVersion": "v1", "kubernetes": []any{binding}})
	return data
}

// mark is one line a benchmark hook wrote to $BENCH_OUT:
// "sync <ts> <objects>" for a Synchronization context, "<ts> <name>" for an
// Event context. <ts> is the hook's own start time, in ns since the epoch.
type mark struct {
	At      time.Time
	Sync    bool
	Objects int    // Synchronization: how many objects it listed
	Name    string // Event: the object's name
}

// parseMark reads one line of $BENCH_OUT.
func parseMark(line string) (mark, error) {
	f := strings.Fields(line)
	var m mark
	switch {
	case len(f) == 3 && f[0] == "sync":
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return mark{}, fmt.Errorf("hook output %q: object count: %w", line, err)
		}
		m.Sync, m.Objects, f = true, n, f[1:2]
	case len(f) == 2:
		m.Name, f = f[1], f[:1]
	default:
		return mark{}, fmt.Errorf("hook output %q: want \"sync <ts> <objects>\" or \"<ts> <name>\"", line)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return mark{}, fmt.Errorf("hook output %q: timestamp: %w", line, err)
	}
	m.At = time.Unix(0, ns)
	return m, nil
}

// hookOutput follows the $BENCH_OUT file of one operator run.
type hookOutput struct {
	path   string
	offset int64
	rest   []byte // an incomplete last line

	// syncs are the Synchronization marks, in order.
	syncs []mark
	// seen maps an object name to the start of the first run that had its
	// event.
	seen map[string]time.Time
	// runs counts the distinct hook start times of event lines: the runs
	// that delivered events.
	runs   int
	lastAt time.Time
}

func newHookOutput(path string) *hookOutput {
	return &hookOutput{path: path, seen: map[string]time.Time{}}
}

// poll reads what the hook appended since the last poll.
func (o *hookOutput) poll() error {
	f, err := os.Open(o.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(o.offset, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	o.offset += int64(len(data))
	data = append(o.rest, data...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		o.rest = data
		return nil
	}
	o.rest = append([]byte(nil), data[end+1:]...)
	for _, line := range strings.Split(string(data[:end]), "\n") {
		if line == "" {
			continue
		}
		m, err := parseMark(line)
		if err != nil {
			return err
		}
		o.add(m)
	}
	return nil
}

func (o *hookOutput) add(m mark) {
	if m.Sync {
		o.syncs = append(o.syncs, m)
		return
	}
	if !m.At.Equal(o.lastAt) {
		o.runs++
		o.lastAt = m.At
	}
	if _, ok := o.seen[m.Name]; !ok {
		o.seen[m.Name] = m.At
	}
}
