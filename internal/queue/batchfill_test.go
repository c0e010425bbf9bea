package queue

import (
	"fmt"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// A batch window ends early once BatchFill of the hook's tasks wait: the
// run starts at the push that fills it, long before the window's end, and
// takes every waiting event of its hook in order. Tasks of another hook in
// the same queue do not count toward it.
func TestBatchFillEndsTheWindowEarly(t *testing.T) {
	const window, fill = 40 * time.Millisecond, 4
	s, clk, r, starts := clockedSet(Options{RetryInitial: time.Second, RetryMax: time.Second, BatchWindow: window, BatchFill: fill})
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	push := func(h *hook.Hook, name string) {
		t.Helper()
		must(t, s.Push(task(h, name, nil)))
	}
	noStart := func(why string) {
		t.Helper()
		select {
		case at := <-starts:
			t.Fatalf("a run started at +%s %s", at.Sub(clk.Now()), why)
		case <-time.After(50 * time.Millisecond):
		}
	}

	push(a, "e0")
	receive(t, starts, 10*time.Second, "the first run did not start")
	clk.add(time.Millisecond)
	push(a, "e1") // a stream: a millisecond after e0
	r.gate <- struct{}{}
	ended := clk.Now()
	clk.nextTimer(t) // the queue waits for its window

	clk.add(time.Millisecond)
	push(a, "e2")
	push(b, "b0")
	push(b, "b1")
	push(b, "b2")
	noStart("with 2 of a's tasks waiting and 3 of b's: b's do not fill a's batch")
	clk.add(time.Millisecond)
	push(a, "e3")
	noStart("with 3 of a's tasks waiting; the fill is 4")
	push(a, "e4")
	at := receive(t, starts, 10*time.Second, "no run started when the fourth of a's tasks was pushed")
	if got := at.Sub(ended); got != 2*time.Millisecond {
		t.Errorf("the filled run started %s after the last run ended; want 2ms, at the push that filled it (the window is %s)", got, window)
	}
	r.gate <- struct{}{}
	r.waitRuns(t, 2, "the second run did not finish")
	if got, want := fmt.Sprint(r.snapshot()[1]), "[a e1 e2 e3 e4]"; got != want {
		t.Errorf("the filled run took %s; want %s: every waiting event of its hook, in order", got, want)
	}
}

// A resident hook's batch fills at ResidentBatchFill, a one-shot hook's at
// BatchFill, both in the same queue: the resident hook's run starts at the
// push of its second waiting event, while the one-shot hook's waits for
// its fourth.
func TestResidentBatchFill(t *testing.T) {
	const window = 40 * time.Millisecond
	s, clk, r, starts := clockedSet(Options{RetryInitial: time.Second, RetryMax: time.Second, BatchWindow: window, BatchFill: 4, ResidentBatchFill: 2})
	defer s.Stop(time.Second)
	resident := &hook.Hook{Name: "resident"}
	resident.Config.Settings.Resident = true
	oneShot := &hook.Hook{Name: "one-shot"}
	for _, c := range []struct {
		h    *hook.Hook
		fill int
	}{{resident, 2}, {oneShot, 4}} {
		must(t, s.Push(task(c.h, "first", nil)))
		receive(t, starts, 10*time.Second, c.h.Name+": the first run did not start")
		clk.add(time.Millisecond)
		must(t, s.Push(task(c.h, "e1", nil))) // a stream: the next run waits for its window
		r.gate <- struct{}{}
		ended := clk.Now()
		clk.nextTimer(t)
		for i := 2; i <= c.fill; i++ {
			select {
			case at := <-starts:
				t.Fatalf("%s: a run started at +%s with %d events waiting; its fill is %d", c.h.Name, at.Sub(ended), i-1, c.fill)
			case <-time.After(50 * time.Millisecond):
			}
			clk.add(time.Millisecond)
			must(t, s.Push(task(c.h, fmt.Sprintf("e%d", i), nil)))
		}
		at := receive(t, starts, 10*time.Second, c.h.Name+": no run started when its batch filled")
		if got, want := at.Sub(ended), time.Duration(c.fill-1)*time.Millisecond; got != want {
			t.Errorf("%s: the filled run started %s after the last ended; want %s, at the push that filled it (fill %d)", c.h.Name, got, want, c.fill)
		}
		r.gate <- struct{}{}
		clk.add(time.Second) // the next hook's first event finds the queue idle
	}
}
