package hooktest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/sirupsen/logrus"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/replay"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// result is how one case went.
type result struct {
	runs    int
	diff    string // expected vs actual; empty when they agree
	updated bool
	err     error // the case could not run
}

func runCase(ctx context.Context, dir string, hooks []*hook.Hook, f Flags, log logrus.FieldLogger) result {
	fx, err := readCase(dir)
	if err != nil {
		return result{err: err}
	}
	hooks, err = selectHooks(dir, hooks)
	if err != nil {
		return result{err: err}
	}
	topts := transcript.Options{ShowSecrets: f.ShowSecrets}
	var runs []transcript.Run
	_, err = replay.Run(ctx, replay.Options{
		Hooks: hooks, Fixture: fx,
		TmpDir: f.TmpDir, Env: os.Environ(), HookTimeout: f.HookTimeout, MaxRuns: f.MaxRuns,
		Log: log,
		Report: func(r executor.Report, changes []memcluster.Change) {
			runs = append(runs, transcript.New(r, transcript.FromMemory(changes, topts), topts))
		},
	})
	if err != nil {
		return result{err: err}
	}
	actual, err := asValues(runs)
	if err != nil {
		return result{err: err}
	}
	path := filepath.Join(dir, ExpectedFile)
	if f.Update {
		if err := failedRuns(runs); err != nil && !f.UpdateFailed {
			return result{runs: len(runs), err: fmt.Errorf("%w; %s was not written: fix the hook, or give --update-failed to record the failure as expected", err, ExpectedFile)}
		}
		if err := writeExpected(path, actual); err != nil {
			return result{err: err}
		}
		return result{runs: len(runs), updated: true}
	}
	expected, err := readExpected(path)
	if err != nil {
		return result{runs: len(runs), err: err}
	}
	diff, err := compare(expected, actual)
	return result{runs: len(runs), diff: diff, err: err}
}

// failedRuns says how many of runs failed, and why the first did; nil
// when none did.
func failedRuns(runs []transcript.Run) error {
	var first *transcript.Run
	n := 0
	for i := range runs {
		if runs[i].Error != "" {
			if n++; first == nil {
				first = &runs[i]
			}
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d runs failed (the first, of %s for %s: %s)", n, len(runs), first.Hook, first.Binding, first.Error)
}

// caseSettings is a case's case.yaml.
type caseSettings struct {
	// Hooks lists the hooks the case runs (paths under the hooks folder);
	// empty runs every hook.
	Hooks []string `json:"hooks"`
}

// selectHooks returns the hooks the case's case.yaml names, or all.
func selectHooks(dir string, hooks []*hook.Hook) ([]*hook.Hook, error) {
	path := filepath.Join(dir, CaseFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return hooks, nil
	}
	if err != nil {
		return nil, err
	}
	var cs caseSettings
	if err := yaml.UnmarshalStrict(data, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w (it holds hooks: [PATH, ...])", path, err)
	}
	if len(cs.Hooks) == 0 {
		return hooks, nil
	}
	var out []*hook.Hook
	for _, name := range cs.Hooks {
		var found *hook.Hook
		var names []string
		for _, h := range hooks {
			names = append(names, h.Name)
			if h.Name == name {
				found = h
			}
		}
		if found == nil {
			return nil, fmt.Errorf("%s: no hook %q under the hooks folder (there are: %s)", path, name, strings.Join(names, ", "))
		}
		out = append(out, found)
	}
	return out, nil
}

// readCase reads the case's objects and events; both are optional.
func readCase(dir string) (*fixture.Fixture, error) {
	objects := ""
	for _, n := range []string{ObjectsFile, ObjectsDir} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			objects = filepath.Join(dir, n)
			break
		}
	}
	events := filepath.Join(dir, EventsFile)
	if _, err := os.Stat(events); err != nil {
		events = ""
	}
	if objects == "" && events == "" {
		return &fixture.Fixture{}, nil
	}
	return fixture.Read(objects, events)
}

// asValues turns runs into plain JSON values, the form expectations are
// read into.
func asValues(runs []transcript.Run) ([]any, error) {
	data, err := json.Marshal(runs)
	if err != nil {
		return nil, err
	}
	var out []any
	return out, json.Unmarshal(data, &out)
}

func writeExpected(path string, runs []any) error {
	var b bytes.Buffer
	b.WriteString("# Expected runs, as `hook-operator replay -o yaml` prints them. Fields left\n# out of a run are not compared. Rewrite with `hook-operator test --update`.\n")
	for _, r := range runs {
		y, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// readExpected reads the expected runs: YAML documents, one run each.
func readExpected(path string) ([]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing: write it with --update (and review it)", path)
	}
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []any
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: document %d: want one run (a map with hook, binding, contexts ...), got %T", path, i+1, v)
		}
		out = append(out, v)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// compare returns a unified diff of expected against actual runs, with the
// fields an expected run leaves out dropped from its actual run; "" when
// they agree.
func compare(expected, actual []any) (string, error) {
	trimmed := make([]any, len(actual))
	for i, a := range actual {
		trimmed[i] = a
		if i >= len(expected) {
			continue
		}
		em, eok := expected[i].(map[string]any)
		am, aok := a.(map[string]any)
		if !eok || !aok {
			continue
		}
		t := map[string]any{}
		for k, v := range am {
			if _, keep := em[k]; keep {
				t[k] = v
			}
		}
		trimmed[i] = t
	}
	e, err := render(expected)
	if err != nil {
		return "", err
	}
	a, err := render(trimmed)
	if err != nil {
		return "", err
	}
	if e == a {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(e), B: difflib.SplitLines(a),
		FromFile: "expected", ToFile: "actual", Context: 4,
	})
}

func render(runs []any) (string, error) {
	var b strings.Builder
	for i, r := range runs {
		y, err := yaml.Marshal(r)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "--- # run %d\n%s", i+1, y)
	}
	return b.String(), nil
}
