// Package procs fits the number of processors that run the operator's Go
// code (GOMAXPROCS) to its load: one while it uses little CPU, the
// runtime's default (every core the process may use) while it needs more.
// It also keeps the runtime's monitor thread from being woken after every
// idle moment (SteadySysmon, sysmon.go).
//
// An operator mostly waits. Each watch event wakes it for a fraction of a
// millisecond, and passes from goroutine to goroutine (the stream decoder, the
// reflector, the queue, the runner; and, before the watches were HTTP/1.1, the
// HTTP/2 read loop). With a processor idle, every such handoff wakes a second
// thread, which spins looking for work and sleeps again: on a virtual machine,
// where each thread wake-up and sleep is a costly exit to the hypervisor, that
// was a fifth to a quarter of the operator's CPU per event (measured in
// docs/design/process.md, "GOMAXPROCS follows the load"). With one processor
// the handoff is a goroutine switch on the same thread. Under load (a large
// list, a storm of events, many admission requests) one processor would be a
// bottleneck, so the governor gives back every processor as soon as the
// process uses half a core, and takes them away again only after a calm
// second.
package procs

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// Options tune the governor; the zero value of a field takes its default.
type Options struct {
	// Interval is how often it samples the process's CPU time (250 ms).
	Interval time.Duration
	// Raise is the load, in cores used over one interval, at or above
	// which one processor gives way to the runtime's default (0.5).
	Raise float64
	// Lower is the load below which, for Calm intervals in a row, the
	// process goes back to one processor (0.35: with more processors the same
	// work costs more CPU, so this is well under Raise).
	Lower float64
	// Calm is that number of intervals (4: one second).
	Calm int
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.Raise <= 0 {
		o.Raise = 0.5
	}
	if o.Lower <= 0 {
		o.Lower = 0.35
	}
	if o.Calm <= 0 {
		o.Calm = 4
	}
	return o
}

// fixed reports why the governor must not run, or "" when it may: the
// GOMAXPROCS environment variable sets the count for good.
func fixed(lookup func(string) (string, bool)) string {
	if v, ok := lookup("GOMAXPROCS"); ok && v != "" {
		return "GOMAXPROCS=" + v + " is set"
	}
	return ""
}

// Govern adapts GOMAXPROCS to the process's load until ctx ends, then
// gives the runtime back its default. It returns at once, doing nothing,
// when GOMAXPROCS is set in the environment.
func Govern(ctx context.Context, opts Options, log logrus.FieldLogger) {
	if why := fixed(os.LookupEnv); why != "" {
		log.WithField("reason", why).Debug("GOMAXPROCS stays fixed")
		return
	}
	g := newGovernor(opts.withDefaults(), runtimeProcs{}, log)
	defer g.procs.restore()
	t := time.NewTicker(g.opts.Interval)
	defer t.Stop()
	for now := time.Now(); ; {
		if cpu, ok := cpuTime(); ok {
			g.sample(now, cpu)
		}
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		}
	}
}

// processors is what the governor changes: the runtime's setting, or a
// test's record of it.
type processors interface {
	// one runs Go code on a single processor.
	one()
	// restore gives the runtime back its default, which follows the CPUs
	// and cgroup quota the process has.
	restore()
	// current returns the setting now.
	current() int
}

type runtimeProcs struct{}

func (runtimeProcs) one()         { runtime.GOMAXPROCS(1) }
func (runtimeProcs) restore()     { runtime.SetDefaultGOMAXPROCS() }
func (runtimeProcs) current() int { return runtime.GOMAXPROCS(0) }

type governor struct {
	opts  Options
	procs processors
	log   logrus.FieldLogger
	// single is set while the governor holds the process to one processor.
	single bool
	// calm counts the samples in a row below opts.Lower.
	calm int
	// lastAt and lastCPU are the previous sample (lastAt zero: none).
	lastAt  time.Time
	lastCPU time.Duration
}

func newGovernor(opts Options, p processors, log logrus.FieldLogger) *governor {
	return &governor{opts: opts, procs: p, log: log}
}

// sample takes the process's CPU time cpu at now, and acts on the load
// since the previous sample.
func (g *governor) sample(now time.Time, cpu time.Duration) {
	prevAt, prevCPU := g.lastAt, g.lastCPU
	if !prevAt.IsZero() && !now.After(prevAt) {
		return // no time has passed: wait for the next
	}
	g.lastAt, g.lastCPU = now, cpu
	if !prevAt.IsZero() {
		g.observe(float64(cpu-prevCPU) / float64(now.Sub(prevAt)))
	}
}

// observe acts on one interval's load, in cores.
func (g *governor) observe(load float64) {
	if g.single {
		if load >= g.opts.Raise {
			g.single, g.calm = false, 0
			g.procs.restore()
			g.log.WithFields(logrus.Fields{"load": fmt.Sprintf("%.2f cores", load), "gomaxprocs": g.procs.current()}).Debug("busy: Go code runs on every processor")
		}
		return
	}
	if load >= g.opts.Lower {
		g.calm = 0
		return
	}
	if g.calm++; g.calm < g.opts.Calm {
		return
	}
	g.calm = 0
	if g.procs.current() <= 1 {
		return // the default is one processor already
	}
	g.single = true
	g.procs.one()
	g.log.WithField("load", fmt.Sprintf("%.2f cores", load)).Debug("calm: Go code runs on one processor")
}

// cpuTime returns the CPU time the process has used (its threads, not its
// children: the hooks), and false if it cannot be read.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
