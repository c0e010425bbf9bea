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
	deadline := time.After(10 * time.Second)
	for len(r.snapshot()) < 2 {
		select {
		case <-deadline:
			t.Fatal("the second run did not finish")
		case <-time.After(time.Millisecond):
		}
	}
	if got, want := fmt.Sprint(r.snapshot()[1]), "[a e1 e2 e3 e4]"; got != want {
		t.Errorf("the filled run took %s; want %s: every waiting event of its hook, in order", got, want)
	}
}
