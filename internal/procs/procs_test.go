package procs

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/poll"
)

// fakeProcs records what the governor asks for.
type fakeProcs struct {
	max, n int
	calls  []string
}

func (f *fakeProcs) one()         { f.n = 1; f.calls = append(f.calls, "one") }
func (f *fakeProcs) restore()     { f.n = f.max; f.calls = append(f.calls, "restore") }
func (f *fakeProcs) current() int { return f.n }

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func TestGovernorHysteresis(t *testing.T) {
	p := &fakeProcs{max: 2, n: 2}
	g := newGovernor(Options{Raise: 0.5, Lower: 0.2, Calm: 4}.withDefaults(), p, quiet())
	steps := []struct {
		load float64
		want int
	}{
		{0.9, 2}, {0.1, 2}, {0.1, 2}, {0.3, 2}, // a load above Lower restarts the count
		{0.1, 2}, {0.1, 2}, {0.1, 2}, {0.19, 1}, // four calm samples in a row: one processor
		{0.45, 1}, {0.3, 1}, // under Raise: stays
		{0.5, 2},                     // at Raise: back to the default at once
		{0.1, 2}, {0.1, 2}, {0.1, 2}, // three calm samples are not enough
		{0.6, 2}, {0.1, 2}, {0.1, 2}, {0.1, 2}, {0.1, 1},
	}
	for i, s := range steps {
		g.observe(s.load)
		if p.n != s.want {
			t.Fatalf("step %d (load %.2f): GOMAXPROCS %d, want %d (calls %v)", i, s.load, p.n, s.want, p.calls)
		}
	}
	if got := len(p.calls); got != 3 {
		t.Errorf("the runtime was changed %d times (%v), want 3: each change only when the state changes", got, p.calls)
	}
}

func TestGovernorDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Lower >= o.Raise || o.Calm < 1 || o.Interval <= 0 {
		t.Errorf("defaults %+v: Lower must be under Raise (or the governor would swing at every sample), Calm and Interval positive", o)
	}
}

func TestGovernorLeavesASingleProcessorDefault(t *testing.T) {
	p := &fakeProcs{max: 1, n: 1}
	g := newGovernor(Options{}.withDefaults(), p, quiet())
	for range 10 {
		g.observe(0)
	}
	g.observe(0.9)
	if len(p.calls) != 0 {
		t.Errorf("with one processor by default the governor changed the runtime: %v", p.calls)
	}
}

func TestGovernorLoadFromCPUTime(t *testing.T) {
	p := &fakeProcs{max: 4, n: 4}
	g := newGovernor(Options{Calm: 1, Lower: 0.2, Raise: 0.5}.withDefaults(), p, quiet())
	at := time.Unix(1000, 0)
	g.sample(at, time.Second) // first sample: no interval yet
	if len(p.calls) != 0 {
		t.Fatalf("the first sample acted: %v", p.calls)
	}
	g.sample(at.Add(time.Second), time.Second+100*time.Millisecond) // 0.1 cores
	if p.n != 1 {
		t.Fatalf("0.1 cores: GOMAXPROCS %d, want 1", p.n)
	}
	g.sample(at.Add(time.Second), 2*time.Second) // no time passed: ignored
	if p.n != 1 {
		t.Fatalf("a sample at the same instant acted: %v", p.calls)
	}
	g.sample(at.Add(1500*time.Millisecond), 2*time.Second+100*time.Millisecond) // 1.8 s of CPU in 0.5 s
	if p.n != 4 {
		t.Fatalf("3.6 cores: GOMAXPROCS %d, want 4", p.n)
	}
}

func TestFixedByTheEnvironment(t *testing.T) {
	env := map[string]string{"GOMAXPROCS": "3"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if fixed(lookup) == "" {
		t.Error("GOMAXPROCS=3 in the environment: the governor must not run")
	}
	env["GOMAXPROCS"] = ""
	if why := fixed(lookup); why != "" {
		t.Errorf("GOMAXPROCS empty: %q, want the governor to run", why)
	}
	delete(env, "GOMAXPROCS")
	if why := fixed(lookup); why != "" {
		t.Errorf("no GOMAXPROCS: %q, want the governor to run", why)
	}
}

// TestGovernOnTheRuntime runs the governor on this test process: idle, it
// goes to one processor; spinning goroutines bring back the default; when
// its context ends, the default stays.
func TestGovernOnTheRuntime(t *testing.T) {
	if fixed(os.LookupEnv) != "" {
		t.Skip("GOMAXPROCS is set in the environment; the governor does not run then, as TestFixedByTheEnvironment checks")
	}
	runtime.SetDefaultGOMAXPROCS()
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		t.Skipf("this machine gives the process %d processor: nothing to govern", max)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Low thresholds, so that a machine busy with other tests still
		// lets the spinning goroutines count as load.
		Govern(ctx, Options{Interval: 20 * time.Millisecond, Raise: 0.15, Lower: 0.05, Calm: 3}, quiet())
	}()
	waitFor(t, "one processor while idle", func() bool { return runtime.GOMAXPROCS(0) == 1 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	waitFor(t, "the default while busy", func() bool { return runtime.GOMAXPROCS(0) == max })
	close(stop)
	wg.Wait()
	waitFor(t, "one processor once calm again", func() bool { return runtime.GOMAXPROCS(0) == 1 })
	cancel()
	<-done
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Errorf("after the governor ended GOMAXPROCS is %d, want the default %d", got, max)
	}
}

// waitFor waits up to 30s for cond; a failure names GOMAXPROCS, which
// these tests change.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%s (GOMAXPROCS %d)", what, runtime.GOMAXPROCS(0)), cond)
}
