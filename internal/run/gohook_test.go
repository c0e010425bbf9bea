package run

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// buildGo builds the Go program pkg as name in a fresh dir.
func buildGo(tb testing.TB, pkg, name string) (dir, bin string) {
	tb.Helper()
	dir = tb.TempDir()
	bin = filepath.Join(dir, name)
	if out, err := gobuild.Command("", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return dir, bin
}

// TestGoHook runs a compiled Go program as a hook, built from
// testdata/gohook for this test.
func TestGoHook(t *testing.T) {
	dir, bin := buildGo(t, "./testdata/gohook", "gohook")
	h := &hook.Hook{Name: "go/gohook", Path: bin, Dir: dir}

	t.Run("success", func(t *testing.T) {
		r, logs := testRunner(t)
		contexts := `[{"binding":"schedule","type":"Schedule"},{"binding":"schedule","type":"Schedule"}]`
		res, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(contexts), Binding: "schedule", Queue: "main"})
		if err != nil {
			t.Fatal(err)
		}
		var report struct {
			Args          int    `json:"args"`
			Cwd           string `json:"cwd"`
			RunDir        string `json:"runDir"`
			RunDirMode    string `json:"runDirMode"`
			ContextMode   string `json:"contextMode"`
			SameDir       bool   `json:"sameDir"`
			AdmissionSame bool   `json:"admissionSame"`
			Bindings      int    `json:"bindings"`
		}
		if err := json.Unmarshal(res.Operations, &report); err != nil {
			t.Fatalf("report %q: %v", res.Operations, err)
		}
		if report.Args != 0 || report.Cwd != dir || report.RunDirMode != "700" || report.ContextMode != "600" ||
			!report.SameDir || !report.AdmissionSame || report.Bindings != 2 || tmpDirOf(report.RunDir) != r.TmpDir {
			t.Errorf("the hook saw %+v", report)
		}
		assertEmptyDir(t, r.TmpDir)
		if !strings.Contains(string(res.Metrics), "go_hook_runs") || string(res.ValidatingResponse) != `{"allowed":true}` ||
			string(res.ConversionResponse) != `{"convertedObjects":[]}` {
			t.Errorf("outputs: metrics %q, validating %q, conversion %q", res.Metrics, res.ValidatingResponse, res.ConversionResponse)
		}
		if res.MaxRSS < 32<<20 {
			t.Errorf("MaxRSS = %d, want at least the 32 MiB the hook touched", res.MaxRSS)
		}
		if res.UserCPU+res.SystemCPU <= 0 {
			t.Errorf("CPU time = %v + %v", res.UserCPU, res.SystemCPU)
		}

		var done *logrus.Entry
		for _, e := range outputEntries(logs) {
			if e.Message == "go hook done" {
				done = &e
			}
		}
		if done == nil {
			t.Fatal("the hook's JSON line was not logged with its msg")
		}
		if done.Level != logrus.DebugLevel || done.Data["bindings"] != json.Number("2") ||
			done.Data["queue"] != "main" || done.Data["fields.queue"] != "spoofed" || done.Data["hook"] != "go/gohook" {
			t.Errorf("JSON line record: level %v, fields %v", done.Level, done.Data)
		}
	})

	t.Run("failure", func(t *testing.T) {
		r, _ := testRunner(t)
		res, err := r.Run(context.Background(), Request{Hook: h, Contexts: []byte(`[{"binding":"fail"}]`)})
		if err == nil || !strings.Contains(err.Error(), "exit code 7") || !strings.Contains(err.Error(), "cannot reach the database") {
			t.Fatalf("error = %v, want exit code 7 with the stderr line", err)
		}
		if res.StderrTail != "go hook: cannot reach the database" {
			t.Errorf("StderrTail = %q", res.StderrTail)
		}
		if res.Operations != nil {
			t.Errorf("outputs of a failed run were read: %q", res.Operations)
		}
		assertEmptyDir(t, r.TmpDir)
	})
}
