package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

type recorder struct {
	mu   sync.Mutex
	runs [][]string // per run: hook name then binding names
	fail map[string]int
	gate chan struct{} // when set, each run waits for a value
}

func (r *recorder) handle(ctx context.Context, t *Task) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	run := []string{t.Hook.Name}
	for _, c := range t.Contexts {
		run = append(run, c.Binding)
	}
	r.runs = append(r.runs, run)
	if r.fail[t.Hook.Name] > 0 {
		r.fail[t.Hook.Name]--
		return errors.New("boom")
	}
	return nil
}

func (r *recorder) snapshot() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.runs...)
}

// waitRuns waits until the recorder holds n runs, failing the test with
// what after 10 seconds.
func (r *recorder) waitRuns(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(r.snapshot()) < n {
		select {
		case <-deadline:
			t.Fatal(what)
		case <-time.After(time.Millisecond):
		}
	}
}

func task(h *hook.Hook, b string, done func(error)) *Task {
	return &Task{Hook: h, Contexts: []binding.Context{{Binding: b}}, Done: done}
}

func newSet(r *recorder) *Set {
	l, _ := logtest.NewNullLogger()
	return NewSet(r.handle, Options{RetryInitial: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond}, logrus.NewEntry(l))
}

func waitDone(t *testing.T, ch <-chan error) error {
	t.Helper()
	return receive(t, ch, 5*time.Second, "task never finished")
}

// waitAllDone waits for n tasks to end, failing the test at the first
// that ends with an error.
func waitAllDone(t *testing.T, ch <-chan error, n int) {
	t.Helper()
	for range n {
		must(t, waitDone(t, ch))
	}
}

// receive returns what ch sends, or fails the test saying what did not
// happen within the time.
func receive[T any](t *testing.T, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatal(what)
		var zero T
		return zero
	}
}

// While a run holds the queue, later tasks of the same hook merge into one
// run, oldest first; other hooks keep their place.
func TestMergesPendingTasksOfAHook(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	s := newSet(r)
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	done := make(chan error, 10)
	fin := func(err error) { done <- err }
	must(t, s.Push(task(a, "first", fin)))
	// Let the worker take "first" and block in the handler.
	time.Sleep(50 * time.Millisecond)
	must(t, s.Push(task(a, "a1", fin)))
	must(t, s.Push(task(b, "b1", fin)))
	must(t, s.Push(task(a, "a2", fin)))
	for range 3 {
		r.gate <- struct{}{}
	}
	waitAllDone(t, done, 4)
	got := r.snapshot()
	want := [][]string{{"a", "first"}, {"a", "a1", "a2"}, {"b", "b1"}}
	if !equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

// A failing run holds its queue and is retried, merged with what came
// meanwhile, until it succeeds; only then does the queue move on.
func TestFailureHoldsQueueAndRetries(t *testing.T) {
	r := &recorder{fail: map[string]int{"a": 2}}
	s := newSet(r)
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	done := make(chan error, 10)
	fin := func(err error) { done <- err }
	start := time.Now()
	must(t, s.Push(task(a, "a1", fin)))
	must(t, s.Push(task(b, "b1", fin)))
	for range 2 {
		if err := waitDone(t, done); err != nil {
			t.Fatalf("a non-allowed failure reached Done: %v", err)
		}
	}
	got := r.snapshot()
	want := [][]string{{"a", "a1"}, {"a", "a1"}, {"a", "a1"}, {"b", "b1"}}
	if !equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	// Two pauses: about 20ms and 40ms, each ±20%.
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Errorf("retries came after %v; want backoff pauses of at least 16ms+32ms", el)
	}
}

func TestAllowFailureMovesOn(t *testing.T) {
	r := &recorder{fail: map[string]int{"a": 5}}
	s := newSet(r)
	defer s.Stop(time.Second)
	a := &hook.Hook{Name: "a"}
	done := make(chan error, 1)
	tk := task(a, "a1", func(err error) { done <- err })
	tk.AllowFailure = true
	must(t, s.Push(tk))
	if err := waitDone(t, done); err == nil {
		t.Fatal("Done got no error for an allowed failure")
	}
	if n := len(r.snapshot()); n != 1 {
		t.Errorf("%d runs, want 1 (no retry when failure is allowed)", n)
	}
}

func TestBackoffGrowsToCap(t *testing.T) {
	s := newSet(&recorder{})
	defer s.Stop(time.Second)
	for n, want := range map[int]time.Duration{1: 20 * time.Millisecond, 2: 40 * time.Millisecond, 3: 80 * time.Millisecond, 9: 80 * time.Millisecond} {
		d := s.backoff(n)
		if d < want*8/10 || d > want*12/10 {
			t.Errorf("backoff(%d) = %v, want %v ±20%%", n, d, want)
		}
	}
}

// A hook with executionMinInterval runs at most that often; the events that
// arrive meanwhile are merged into its next run.
func TestRateLimitMergesWhileWaiting(t *testing.T) {
	r := &recorder{}
	s := newSet(r)
	defer s.Stop(time.Second)
	a := &hook.Hook{Name: "a", Config: hook.Config{Settings: hook.Settings{ExecutionMinInterval: 300 * time.Millisecond, ExecutionBurst: 1}}}
	done := make(chan error, 20)
	fin := func(err error) { done <- err }
	for i := range 10 {
		must(t, s.Push(task(a, string(rune('0'+i)), fin)))
		time.Sleep(20 * time.Millisecond)
	}
	for range 10 {
		waitDone(t, done)
	}
	got := r.snapshot()
	if len(got) < 2 || len(got) > 3 {
		t.Fatalf("runs %v: want 2 or 3 runs for 10 tasks within ~200ms at one run per 300ms", got)
	}
	total := 0
	for _, run := range got {
		total += len(run) - 1
	}
	if total != 10 {
		t.Errorf("runs %v carry %d contexts, want all 10", got, total)
	}
}

// Stop lets a running hook finish within the grace period and refuses new work.
func TestStopWaitsForRunningTask(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	s := newSet(r)
	a := &hook.Hook{Name: "a"}
	done := make(chan error, 1)
	must(t, s.Push(task(a, "a1", func(err error) { done <- err })))
	time.Sleep(30 * time.Millisecond)
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.gate <- struct{}{}
	}()
	s.Stop(5 * time.Second)
	if err := waitDone(t, done); err != nil {
		t.Fatalf("running task did not finish cleanly: %v", err)
	}
	if err := s.Push(task(a, "late", nil)); !errors.Is(err, ErrStopped) {
		t.Errorf("Push after Stop = %v, want ErrStopped", err)
	}
}

// A task still running when the grace period ends is cancelled.
func TestStopCancelsAfterGrace(t *testing.T) {
	r := &recorder{gate: make(chan struct{})} // never opened
	s := newSet(r)
	must(t, s.Push(task(&hook.Hook{Name: "a"}, "a1", nil)))
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	s.Stop(100 * time.Millisecond)
	if el := time.Since(start); el < 100*time.Millisecond || el > 2*time.Second {
		t.Errorf("Stop returned after %v, want about the 100ms grace", el)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equal(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// With a batch window, a stream of events right after a run waits for the
// window and runs together; an event close behind another waits only until
// half a window passes without another; one that comes more than half a
// window after the one before runs at once, as does the first of a queue
// idle for longer than the window; retries do not wait for it.
func TestBatchWindow(t *testing.T) {
	const window = 400 * time.Millisecond
	clk := newFakeClock()
	r := &recorder{fail: map[string]int{}}
	var mu sync.Mutex
	var starts []time.Time
	handle := func(ctx context.Context, tk *Task) error {
		mu.Lock()
		starts = append(starts, clk.Now())
		mu.Unlock()
		return r.handle(ctx, tk)
	}
	started := func(i int) time.Time {
		mu.Lock()
		defer mu.Unlock()
		return starts[i]
	}
	l, _ := logtest.NewNullLogger()
	s := NewSet(handle, Options{RetryInitial: 10 * time.Millisecond, RetryMax: 10 * time.Millisecond, BatchWindow: window}, logrus.NewEntry(l))
	s.clock = clk
	defer s.Stop(time.Second)
	a := &hook.Hook{Name: "a"}
	done := make(chan error, 100)
	fin := func(err error) { done <- err }
	push := func(b string) time.Time {
		t.Helper()
		if err := s.Push(task(a, b, fin)); err != nil {
			t.Fatal(err)
		}
		return clk.Now()
	}
	// runs waits for n runs to finish, moving the clock on to each timer
	// the queue sets meanwhile.
	runs := func(n int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for got := 0; got < n; {
			clk.fireNext()
			select {
			case <-done:
				got++
			case <-clk.armed:
			case <-deadline:
				t.Fatalf("%d of %d runs finished within 10 s", got, n)
			}
		}
	}

	// A first event runs at once: the clock does not move.
	pushed := push("first")
	waitDone(t, done)
	if !started(0).Equal(pushed) {
		t.Errorf("the first run started %s after its push; an idle queue must not wait", started(0).Sub(pushed))
	}

	// A stream, an event every 10ms for 500ms, right after that run: the
	// next run waits for the whole window, taking what arrived by then.
	for i := range 50 {
		push(fmt.Sprint("s", i))
		clk.add(10 * time.Millisecond)
	}
	runs(50)
	if gap := started(1).Sub(started(0)); gap < window {
		t.Errorf("during a stream the second run started %s after the first; want at least the window, %s", gap, window)
	}
	snap := r.snapshot()
	if n := len(snap[1]) - 1; n < 40 {
		t.Errorf("the second run took %d events of the stream; want at least those of the whole window, 40", n)
	}
	// Waiting loses and reorders nothing: the runs took the stream whole,
	// in its order.
	var stream []string
	for _, run := range snap[1:] {
		stream = append(stream, run[1:]...)
	}
	for i, b := range stream {
		if want := fmt.Sprint("s", i); b != want || len(stream) != 50 {
			t.Fatalf("the stream's runs took %v; want s0 to s49 in order", stream)
		}
	}

	// A lone event right after a run waits half a window, not a whole one.
	clk.add(window + 50*time.Millisecond)
	pushed = push("lone-a")
	waitDone(t, done)
	n := len(r.snapshot())
	if !started(n - 1).Equal(pushed) {
		t.Errorf("an event after an idle window started %s after its push; want at once", started(n-1).Sub(pushed))
	}
	clk.add(10 * time.Millisecond)
	pushed = push("lone-b")
	if at := clk.nextTimer(t); !at.Equal(pushed.Add(window / 2)) {
		t.Errorf("a lone event after a run waits until %s after its push; want half a window, %s", at.Sub(pushed), window/2)
	}
	runs(1)
	if d := started(n).Sub(pushed); d != window/2 {
		t.Errorf("a lone event after a run started %s after its push; want half a window, %s", d, window/2)
	}

	// An event pushed more than half a window after the one before is no
	// stream: it runs at once, even within a window of the last run.
	clk.add(window + 50*time.Millisecond)
	push("spaced-a")
	waitDone(t, done)
	n = len(r.snapshot())
	clk.add(window/2 + 50*time.Millisecond)
	pushed = push("spaced-b")
	waitDone(t, done)
	if d := started(n).Sub(pushed); d != 0 {
		t.Errorf("an event %s after the one before (and after the last run) started %s after its push; want at once", window/2+50*time.Millisecond, d)
	}

	// After an idle window, the next event runs at once again.
	clk.add(window + 50*time.Millisecond)
	n = len(r.snapshot())
	pushed = push("idle")
	waitDone(t, done)
	if d := started(n).Sub(pushed); d != 0 {
		t.Errorf("after an idle window the run started %s after its push; want at once", d)
	}

	// A retry follows its backoff (10ms ± 20%), not the window, even
	// while events stream in behind it.
	clk.add(window + 50*time.Millisecond)
	r.mu.Lock()
	r.fail["a"] = 1
	r.mu.Unlock()
	n = len(r.snapshot())
	push("retried")
	at := clk.nextTimer(t) // set once the run failed
	failed := started(n)
	behind := task(&hook.Hook{Name: "b"}, "behind", fin)
	if err := s.Push(behind); err != nil {
		t.Fatal(err)
	}
	if at.Sub(failed) < 8*time.Millisecond || at.Sub(failed) > 12*time.Millisecond {
		t.Errorf("the retry waits until %s after the failure; want its backoff, 8-12ms, not the window", at.Sub(failed))
	}
	runs(2)
	if got := len(r.snapshot()); got != n+3 {
		t.Fatalf("%d runs, want %d: the failed one, its retry, and the one behind", got, n+3)
	}
	if d := started(n + 1).Sub(failed); d >= window/2 {
		t.Errorf("the retry started %s after the failure; it must follow the backoff, not the window", d)
	}
}

// A run that failed during an outage of the API server waits for the
// outage to end, however long, then runs at once; the outage's failures do
// not make the next ordinary backoff longer.
func TestOutageFailureRetriedWhenServerIsBack(t *testing.T) {
	back := make(chan struct{})
	var mu sync.Mutex
	var runs []time.Time
	outages := 8
	handler := func(ctx context.Context, tk *Task) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, time.Now())
		switch {
		case outages > 0:
			outages--
			return &OutageError{Err: errors.New("connection refused"), Back: back}
		case len(runs) == 9:
			return errors.New("the hook's own failure")
		}
		return nil
	}
	l, _ := logtest.NewNullLogger()
	// RetryMax is long: only the end of the outage can bring the retry.
	s := NewSet(handler, Options{RetryInitial: 20 * time.Millisecond, RetryMax: time.Hour}, logrus.NewEntry(l))
	defer s.Stop(time.Second)
	done := make(chan error, 1)
	must(t, s.Push(task(&hook.Hook{Name: "a"}, "a1", func(err error) { done <- err })))
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	n := len(runs)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d runs during the outage, want 1: the retry must wait for the server", n)
	}
	ended := time.Now()
	close(back)
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 10 {
		t.Fatalf("%d runs, want 10 (8 in outages, 1 own failure, 1 success)", len(runs))
	}
	// The retries after the outage's failures come at once (its channel is
	// closed; RetryMax is an hour). The retry after the hook's own failure
	// comes after RetryInitial (20ms ±20%), not after a backoff grown by
	// the eight outage failures (20ms·2^8, about 5s).
	if d := runs[1].Sub(ended); d > 2*time.Second {
		t.Errorf("first retry %v after the outage ended, want at once", d)
	}
	if d := runs[9].Sub(runs[8]); d < 16*time.Millisecond || d > 2*time.Second {
		t.Errorf("retry after the hook's own failure came after %v, want RetryInitial (20ms ±20%%)", d)
	}
}
