//go:build linux

package run

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// BenchmarkResidentGoHook compares a run of the Go test hook of
// cmd/hook-operator (testdata/residenthook, which reads the contexts and
// appends a line to a file) one-shot and resident: ns/op is the latency of
// a run as a queue worker sees it, cpu-us/op the operator's own CPU.
func BenchmarkResidentGoHook(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "resident")
	if out, err := gobuild.Command("", "-o", bin, "../../cmd/hook-operator/testdata/residenthook").CombinedOutput(); err != nil {
		b.Fatalf("building the hook: %v\n%s", err, out)
	}
	for _, resident := range []bool{false, true} {
		name := "one-shot"
		if resident {
			name = "resident"
		}
		b.Run(name, func(b *testing.B) {
			logger := logrus.New()
			logger.SetOutput(io.Discard)
			r := &Runner{TmpDir: b.TempDir(), Env: append(os.Environ(), "RESIDENT_MARKS="+b.TempDir()), Log: logger, ReuseDirs: true}
			defer r.Close()
			h := &hook.Hook{Name: "resident", Path: bin, Dir: dir}
			h.Config.Settings = hook.Settings{Resident: resident, ResidentMaxRuns: 1 << 30, ResidentMaxMemory: hook.DefaultResidentMaxMemory}
			req := Request{Hook: h, Contexts: []byte(`[{"binding":"b","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"x"}}}]`)}
			ctx := context.Background()
			before := selfCPU(b)
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Run(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
