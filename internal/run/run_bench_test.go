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
	r := quietRunner(b, reuse)
	defer r.Close()
	h := &hook.Hook{Name: "true", Path: "/bin/true", Dir: b.TempDir()}
	benchmarkRuns(b, r, Request{Hook: h, Contexts: []byte(benchContexts)})
}

// BenchmarkRunDir measures what giving a one-shot run its dir costs: new
// creates and removes it, reused writes the contexts into a kept one.
func BenchmarkRunDir(b *testing.B) {
	ctx := Request{Contexts: []byte(`[{"binding":"b","type":"Event"}]`)}.contextsWriter()
	b.Run("new", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			d, err := newRunDir(dir, ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.remove(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		d, err := newRunDir(b.TempDir(), ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !d.reset() {
			b.Fatal("not reset")
		}
		for b.Loop() {
			if err := d.writeContexts(ctx); err != nil {
				b.Fatal(err)
			}
			if !d.reset() {
				b.Fatal("not reset")
			}
		}
	})
}

// benchContexts are the binding contexts of a benchmarked run: one event.
const benchContexts = `[{"binding":"b","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"x"}}}]`

// quietRunner returns a Runner that logs nothing, with env added to the
// hooks' environment.
func quietRunner(b *testing.B, reuse bool, env ...string) *Runner {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	return &Runner{TmpDir: b.TempDir(), Env: append(os.Environ(), env...), Log: logger, ReuseDirs: reuse}
}

// benchmarkRuns runs req once an iteration, and reports the operator's own
// CPU time per run.
func benchmarkRuns(b *testing.B, r *Runner, req Request) {
	ctx := context.Background()
	before := selfCPU(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, before)
}

// reportCPU reports the CPU time, user and system, this process spent
// since before, per iteration: "cpu-us/op".
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
}

func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
