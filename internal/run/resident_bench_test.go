//go:build linux

package run

import (
	"strconv"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// BenchmarkResidentGoHook compares a run of the Go test hook of
// cmd/hook-operator (testdata/residenthook, which reads the contexts and
// appends a line to a file) one-shot and resident: ns/op is the latency of
// a run as a queue worker sees it, cpu-us/op the operator's own CPU.
func BenchmarkResidentGoHook(b *testing.B) {
	dir, bin := buildGo(b, "../../cmd/hook-operator/testdata/residenthook", "resident")
	for _, resident := range []bool{false, true} {
		name := "one-shot"
		if resident {
			name = "resident"
		}
		b.Run(name, func(b *testing.B) {
			r := quietRunner(b, true, "RESIDENT_MARKS="+b.TempDir())
			defer r.Close()
			h := &hook.Hook{Name: "resident", Path: bin, Dir: dir}
			h.Config.Settings = hook.Settings{Resident: resident, ResidentMaxRuns: 1 << 30, ResidentMaxMemory: hook.DefaultResidentMaxMemory}
			benchmarkRuns(b, r, Request{Hook: h, Contexts: []byte(benchContexts)})
		})
	}
}

// BenchmarkResidentDir measures what giving a resident run its files costs
// (residentDir.prepare): the last run's contexts renamed to the run's name
// and checked, and written over; its outputs removed. Compare BenchmarkRunDir.
func BenchmarkResidentDir(b *testing.B) {
	ctx := Request{Contexts: []byte(`[{"binding":"b","type":"Event"}]`)}.contextsWriter()
	d, err := newResidentDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.remove()
	before := selfCPU(b)
	id := 0
	for b.Loop() {
		id++
		if _, err := d.prepare(strconv.Itoa(id), ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, before)
}
