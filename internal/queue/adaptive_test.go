package queue

import (
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// With AdaptiveBatch, the window after a run during a stream is the hook's
// own run time (at most BatchWindow): a hook whose runs take 1 ms runs
// again 1 ms after its last run ends, one of 10 ms 10 ms after, and one of
// 100 ms the longest window, 40 ms, after. The first event of an idle
// queue runs at once, and the stream's events all run, in their order.
func TestAdaptiveBatchWindowFollowsRunTime(t *testing.T) {
	const longest = 40 * time.Millisecond
	for _, run := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond} {
		t.Run(run.String(), func(t *testing.T) {
			window := min(run, longest)
			step := window / 4 // pushes this far apart are a stream: under half a window
			s, clk, r, starts := clockedSet(Options{RetryInitial: time.Second, RetryMax: time.Second, BatchWindow: longest, AdaptiveBatch: true})
			defer s.Stop(time.Second)
			a := &hook.Hook{Name: "a"}
			pushes := 0
			push := func() time.Time {
				t.Helper()
				must(t, s.Push(task(a, fmt.Sprint("e", pushes), nil)))
				pushes++
				return clk.Now()
			}
			started := func() time.Time {
				t.Helper()
				return receive(t, starts, 10*time.Second, "no run started within 10 s")
			}

			// The first event finds its queue idle: it starts at once.
			pushed := push()
			if at := started(); !at.Equal(pushed) {
				t.Fatalf("the first run started %s after its push; an idle queue must not wait", at.Sub(pushed))
			}
			// Events stream in while the run takes its time; then it ends.
			for range int(run / step) {
				clk.add(step)
				push()
			}
			r.gate <- struct{}{}
			ended := clk.Now()
			clk.nextTimer(t) // the queue waits: the stream goes on

			// The stream goes on, a push every step, until the next run
			// starts; each time a timer fires the queue either sets the
			// next or starts the run before the clock moves again.
			var second time.Time
			for second.IsZero() {
				at, _ := clk.earliest()
				fires := !at.After(clk.Now().Add(step))
				clk.add(step)
				if fires {
					select {
					case second = <-starts:
					case <-clk.armed:
						// drained below
					case <-time.After(10 * time.Second):
						t.Fatal("after a timer fired the queue neither ran nor waited again within 10 s")
					}
				}
				for len(clk.armed) > 0 {
					<-clk.armed
				}
				if second.IsZero() {
					push()
				}
				if clk.Now().Sub(ended) > 2*longest {
					t.Fatalf("no second run %s after the first ended", clk.Now().Sub(ended))
				}
			}
			if gap := second.Sub(ended); gap != window {
				t.Errorf("during a stream the next run started %s after the last ended; want the hook's run time, at most %s: %s", gap, longest, window)
			}
			r.gate <- struct{}{}
			// Nothing is lost or reordered: the second run took every
			// event pushed after the first, in order.
			r.waitRuns(t, 2, "the second run did not finish")
			got := r.snapshot()[1][1:]
			for i, b := range got {
				if want := fmt.Sprint("e", i+1); b != want || len(got) != pushes-1 {
					t.Fatalf("the second run took %v; want e1 to e%d in order", got, pushes-1)
				}
			}
		})
	}
}

// The run time the window follows moves by a quarter of each new run: one
// slow run does not make a fast hook wait long, and the longest window
// bounds a slow hook.
func TestAdaptiveWindowAverage(t *testing.T) {
	s := NewSet(nil, Options{BatchWindow: 40 * time.Millisecond, AdaptiveBatch: true}, logrus.NewEntry(logrus.New()))
	q := &fifo{}
	h := &hook.Hook{Name: "h"}
	if w := s.windowLocked(q, h); w != 0 {
		t.Errorf("window before any run %s; want 0 (nothing to wait for)", w)
	}
	q.noteRunTime("h", 2*time.Millisecond)
	if w := s.windowLocked(q, h); w != 2*time.Millisecond {
		t.Errorf("window after one run of 2ms %s; want 2ms", w)
	}
	q.noteRunTime("h", 10*time.Millisecond)
	if w := s.windowLocked(q, h); w != 4*time.Millisecond {
		t.Errorf("window after runs of 2ms and 10ms %s; want 4ms (a quarter of the way)", w)
	}
	q.noteRunTime("h", time.Second)
	if w := s.windowLocked(q, h); w != 40*time.Millisecond {
		t.Errorf("window after a run of 1s %s; want the longest, 40ms", w)
	}
	if w := s.windowLocked(q, &hook.Hook{Name: "other"}); w != 0 {
		t.Errorf("another hook's window %s; want 0: each hook has its own", w)
	}
	fixed := NewSet(nil, Options{BatchWindow: 40 * time.Millisecond}, logrus.NewEntry(logrus.New()))
	if w := fixed.windowLocked(q, h); w != 40*time.Millisecond {
		t.Errorf("a fixed window is %s; want 40ms whatever the run time", w)
	}
}
