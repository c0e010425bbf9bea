package run

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// BenchmarkRun measures what one run costs the operator process itself
// (its own CPU time, user and system, per run: "cpu-us/op"), with
// /bin/true as the hook, so that the figure is the runtime's overhead per
// run: the run dir, starting and reaping the process, reading the outputs.
// new-dir creates and removes the run dir each run, reused-dir keeps it
// (ReuseDirs, as the operator runs hooks).
func BenchmarkRun(b *testing.B) {
	b.Run("new-dir", func(b *testing.B) { benchmarkRun(b, false) })
	b.Run("reused-dir", func(b *testing.B) { benchmarkRun(b, true) })
}

func benchmarkRun(b *testing.B, reuse bool) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	r := &Runner{TmpDir: b.TempDir(), Env: os.Environ(), Log: logger, ReuseDirs: reuse}
	defer r.Close()
	h := &hook.Hook{Name: "true", Path: "/bin/true", Dir: b.TempDir()}
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
}

func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
