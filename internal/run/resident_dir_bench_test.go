//go:build linux

package run

import (
	"strconv"
	"testing"
)

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
	b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
}
