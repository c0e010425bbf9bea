package metrics

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// goCollector serves the Go runtime's standard metrics, under the names
// the Prometheus Go client gives them, so that dashboards for Go programs
// work unchanged.
type goCollector struct{}

var goNames = []string{
	"go_goroutines", "go_threads", "go_info", "go_gc_duration_seconds",
	"go_memstats_alloc_bytes", "go_memstats_alloc_bytes_total", "go_memstats_sys_bytes",
	"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
	"go_memstats_heap_released_bytes", "go_memstats_heap_objects", "go_memstats_stack_inuse_bytes",
	"go_memstats_next_gc_bytes", "go_memstats_last_gc_time_seconds", "go_memstats_mallocs_total", "go_memstats_frees_total",
	"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_gc_heap_live_bytes", "go_sched_gomaxprocs_threads",
}

func (goCollector) Names() []string { return goNames }

func (goCollector) Collect() []Family {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	threads, _ := runtime.ThreadCreateProfile(nil)
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	quantiles := make([]Quantile, 0, 5)
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		quantiles = append(quantiles, Quantile{q, gc.PauseQuantiles[i].Seconds()})
	}
	settings := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(settings)
	setting := func(i int) float64 {
		if settings[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0
		}
		return float64(settings[i].Value.Uint64())
	}
	return []Family{
		single("go_goroutines", "Number of goroutines that currently exist.", Gauge, float64(runtime.NumGoroutine())),
		single("go_threads", "Number of OS threads created.", Gauge, float64(threads)),
		{Name: "go_info", Help: "Information about the Go environment.", Kind: Gauge, Labels: []string{"version"},
			Series: []Series{{Values: []string{runtime.Version()}, Value: 1}}},
		{Name: "go_gc_duration_seconds", Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", Kind: Summary,
			Series: []Series{{Quantiles: quantiles, Count: uint64(gc.NumGC), Sum: gc.PauseTotal.Seconds()}}},
		single("go_memstats_alloc_bytes", "Number of heap bytes allocated and currently in use.", Gauge, float64(ms.Alloc)),
		single("go_memstats_alloc_bytes_total", "Total number of heap bytes allocated, even if freed.", Counter, float64(ms.TotalAlloc)),
		single("go_memstats_sys_bytes", "Number of bytes obtained from the system.", Gauge, float64(ms.Sys)),
		single("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", Gauge, float64(ms.HeapAlloc)),
		single("go_memstats_heap_inuse_bytes", "Number of heap bytes in spans that are in use.", Gauge, float64(ms.HeapInuse)),
		single("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", Gauge, float64(ms.HeapIdle)),
		single("go_memstats_heap_released_bytes", "Number of heap bytes released to the OS.", Gauge, float64(ms.HeapReleased)),
		single("go_memstats_heap_objects", "Number of currently allocated objects.", Gauge, float64(ms.HeapObjects)),
		single("go_memstats_stack_inuse_bytes", "Number of bytes in use by the stack allocator.", Gauge, float64(ms.StackInuse)),
		single("go_memstats_next_gc_bytes", "Number of heap bytes when the next garbage collection will take place.", Gauge, float64(ms.NextGC)),
		single("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of the last garbage collection.", Gauge, float64(ms.LastGC)/1e9),
		single("go_memstats_mallocs_total", "Total number of heap objects allocated.", Counter, float64(ms.Mallocs)),
		single("go_memstats_frees_total", "Total number of heap objects freed.", Counter, float64(ms.Frees)),
		single("go_gc_gogc_percent", "The GOGC setting.", Gauge, setting(0)),
		single("go_gc_gomemlimit_bytes", "The GOMEMLIMIT setting.", Gauge, setting(1)),
		single("go_gc_heap_live_bytes", "Heap memory occupied by live objects that were marked by the previous GC.", Gauge, setting(2)),
		single("go_sched_gomaxprocs_threads", "The GOMAXPROCS setting.", Gauge, float64(runtime.GOMAXPROCS(0))),
	}
}

// processCollector serves the process's standard metrics from /proc,
// under the names the Prometheus Go client gives them. Where /proc cannot
// be read (not Linux), it serves nothing.
type processCollector struct{}

var processNames = []string{
	"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
	"process_start_time_seconds", "process_open_fds", "process_max_fds",
}

func (processCollector) Names() []string { return processNames }

// userHZ is the unit of the times in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const userHZ = 100

func (processCollector) Collect() []Family {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15, starttime 22, vsize
	// 23, rss 24.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 22 {
		return nil
	}
	num := func(field int) float64 { // field as numbered in proc(5)
		v, _ := strconv.ParseFloat(fields[field-3], 64)
		return v
	}
	out := []Family{
		single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", Counter, (num(14)+num(15))/userHZ),
		single("process_virtual_memory_bytes", "Virtual memory size in bytes.", Gauge, num(23)),
		single("process_resident_memory_bytes", "Resident memory size in bytes.", Gauge, num(24)*float64(os.Getpagesize())),
	}
	if boot := bootTime(); boot > 0 {
		out = append(out, single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", Gauge, boot+num(22)/userHZ))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		out = append(out, single("process_open_fds", "Number of open file descriptors.", Gauge, float64(len(fds))))
	}
	if max := maxFDs(); max > 0 {
		out = append(out, single("process_max_fds", "Maximum number of open file descriptors.", Gauge, max))
	}
	return out
}

// bootTime is when the machine booted, in seconds since 1970 (the btime
// line of /proc/stat); 0 when unknown. It is read once.
var bootTime = sync.OnceValue(func() float64 { return procField("/proc/stat", "btime") })

// maxFDs is the soft limit on open files (/proc/self/limits); 0 when
// unknown or unlimited.
func maxFDs() float64 { return procField("/proc/self/limits", "Max open files") }

// procField returns the number that follows prefix on the first line of
// the file at path that starts with it; 0 when there is none.
func procField(path, prefix string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}

// single is a family of one series without labels.
func single(name, help string, kind Kind, v float64) Family {
	return Family{Name: name, Help: help, Kind: kind, Series: []Series{{Value: v}}}
}
