package run

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

func BenchmarkRunSplit(b *testing.B) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	r := &Runner{TmpDir: b.TempDir(), Env: os.Environ(), Log: logger, ReuseDirs: true}
	defer r.Close()
	h := &hook.Hook{Name: "true", Path: "/bin/true", Dir: b.TempDir()}
	req := Request{Hook: h, Contexts: []byte(`[{"binding":"b","type":"Event","watchEvent":"Added","object":{"metadata":{"name":"x"}}}]`)}
	ctx := context.Background()
	var a, z syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &a)
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &z)
	b.ReportMetric(float64(z.Utime.Nano()-a.Utime.Nano())/1e3/float64(b.N), "user-us/op")
	b.ReportMetric(float64(z.Stime.Nano()-a.Stime.Nano())/1e3/float64(b.N), "sys-us/op")
	b.ReportMetric(float64(z.Nvcsw-a.Nvcsw)/float64(b.N), "vcsw/op")
	b.ReportMetric(float64(z.Nivcsw-a.Nivcsw)/float64(b.N), "ivcsw/op")
}
