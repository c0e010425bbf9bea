package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// gated runs tasks that wait, while gates[label] is open, for it to be
// closed; a task's label is its first context's binding. It records the
// runs (labels of all contexts, joined) and the most runs at once.
type gated struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	runs    []string
	active  map[string]int // per hook
	maxHook map[string]int
	total   int
	max     int
	fail    map[string]int // label → failures left
}

func newGated(labels ...string) *gated {
	g := &gated{gates: map[string]chan struct{}{}, active: map[string]int{}, maxHook: map[string]int{}, fail: map[string]int{}}
	for _, l := range labels {
		g.gates[l] = make(chan struct{})
	}
	return g
}

func (g *gated) handle(ctx context.Context, t *Task) error {
	var labels []string
	for _, c := range t.Contexts {
		labels = append(labels, c.Binding)
	}
	g.mu.Lock()
	g.runs = append(g.runs, strings.Join(labels, "+"))
	g.active[t.Hook.Name]++
	g.total++
	g.maxHook[t.Hook.Name] = max(g.maxHook[t.Hook.Name], g.active[t.Hook.Name])
	g.max = max(g.max, g.total)
	gate := g.gates[labels[0]]
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active[t.Hook.Name]--
	g.total--
	if g.fail[labels[0]] > 0 {
		g.fail[labels[0]]--
		return errors.New("boom")
	}
	return nil
}

func (g *gated) open(label string) { close(g.gates[label]) }

// holdsAtOnce waits until n runs have started and checks that, a moment
// later, no more did: what caps them (limit, for the message) holds.
func (g *gated) holdsAtOnce(t *testing.T, n int, limit string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d runs at once", n), func() bool { return len(g.snapshot()) == n })
	time.Sleep(50 * time.Millisecond) // one more would have started by now
	if got := len(g.snapshot()); got != n {
		t.Fatalf("%d runs at once with %s", got, limit)
	}
}

// openAll opens the gates of labels and waits for as many tasks to end,
// each without an error.
func (g *gated) openAll(t *testing.T, labels []string, done <-chan error) {
	t.Helper()
	for _, l := range labels {
		g.open(l)
	}
	for range labels {
		must(t, waitDone(t, done))
	}
}

func (g *gated) started(label string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.runs {
		if strings.HasPrefix(r, label) {
			return true
		}
	}
	return false
}

func (g *gated) snapshot() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.runs)
}

func parallelSet(g *gated, maxParallel int) *Set {
	l, _ := logtest.NewNullLogger()
	return NewSet(g.handle, Options{RetryInitial: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond, MaxParallel: maxParallel}, logrus.NewEntry(l))
}

func parallelHook(name string, n int) *hook.Hook {
	h := &hook.Hook{Name: name}
	h.Config.Settings.Parallelism = n
	return h
}

func keyed(h *hook.Hook, label, key string, done chan<- error) *Task {
	return &Task{Hook: h, Key: key, Contexts: []binding.Context{{Binding: label}}, Done: func(err error) { done <- err }}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Tasks for different keys run at once, never more than the hook's
// parallelism; the rest wait and run as slots free up.
func TestParallelRunsUpToTheHooksParallelism(t *testing.T) {
	labels := []string{"a", "b", "c", "d", "e", "f"}
	g := newGated(labels...)
	s := parallelSet(g, 0)
	defer s.Stop(time.Second)
	p := parallelHook("p", 3)
	done := make(chan error, 10)
	for _, l := range labels {
		must(t, s.Push(keyed(p, l, l, done)))
	}
	g.holdsAtOnce(t, 3, "parallelism 3")
	g.openAll(t, labels, done)
	if g.maxHook["p"] != 3 {
		t.Errorf("at most %d runs at once, want 3", g.maxHook["p"])
	}
}

// A key's tasks run one at a time and in order; those that pile up while
// one runs are merged into its next run. Other keys go on meanwhile.
func TestParallelKeyInOrderAndMerged(t *testing.T) {
	g := newGated("a1", "b1")
	s := parallelSet(g, 0)
	defer s.Stop(time.Second)
	p := parallelHook("p", 4)
	done := make(chan error, 10)
	must(t, s.Push(keyed(p, "a1", "a", done)))
	eventually(t, "a1 running", func() bool { return g.started("a1") })
	must(t, s.Push(keyed(p, "a2", "a", done)))
	must(t, s.Push(keyed(p, "b1", "b", done)))
	must(t, s.Push(keyed(p, "a3", "a", done)))
	eventually(t, "b1 running beside a1", func() bool { return g.started("b1") })
	time.Sleep(30 * time.Millisecond)
	if g.started("a2") {
		t.Fatal("a2 started while a1 ran")
	}
	g.open("a1")
	g.open("b1")
	for range 4 {
		must(t, waitDone(t, done))
	}
	if runs := g.snapshot(); !slices.Contains(runs, "a2+a3") || len(runs) != 3 {
		t.Errorf("runs %v, want a1, b1 and a2+a3 (merged, in order)", runs)
	}
}

// A task without a key (a Synchronization) is a barrier: it waits for the
// keyed runs before it, runs alone, and nothing behind it starts earlier
// (a task of the same hook behind it is merged into its run, after it).
func TestParallelBarrier(t *testing.T) {
	g := newGated("x", "sync")
	s := parallelSet(g, 0)
	defer s.Stop(time.Second)
	p := parallelHook("p", 4)
	done := make(chan error, 10)
	must(t, s.Push(keyed(p, "x", "x", done)))
	eventually(t, "x running", func() bool { return g.started("x") })
	must(t, s.Push(&Task{Hook: p, Contexts: []binding.Context{{Binding: "sync"}}, Done: func(err error) { done <- err }}))
	must(t, s.Push(keyed(p, "y", "y", done)))
	time.Sleep(30 * time.Millisecond)
	if g.started("sync") || g.started("y") {
		t.Fatalf("runs %v while x ran: the barrier and what is behind it must wait", g.snapshot())
	}
	g.open("x")
	eventually(t, "sync running", func() bool { return g.started("sync") })
	g.open("sync")
	for range 3 {
		must(t, waitDone(t, done))
	}
	if runs := g.snapshot(); !slices.Equal(runs, []string{"x", "sync+y"}) {
		t.Errorf("runs %v, want x, then sync with y merged after it", runs)
	}
}

// A failing key is retried after its own backoff and holds only itself:
// other keys run meanwhile, and the key's later tasks wait for it.
func TestParallelFailureHoldsOnlyItsKey(t *testing.T) {
	g := newGated()
	g.fail["a1"] = 2
	s := parallelSet(g, 0)
	defer s.Stop(time.Second)
	p := parallelHook("p", 2)
	done := make(chan error, 10)
	must(t, s.Push(keyed(p, "a1", "a", done)))
	eventually(t, "a1 failed once", func() bool { return g.started("a1") })
	must(t, s.Push(keyed(p, "a2", "a", done)))
	must(t, s.Push(keyed(p, "b1", "b", done)))
	for range 3 {
		must(t, waitDone(t, done))
	}
	runs := g.snapshot()
	if i, j := slices.Index(runs, "b1"), slices.Index(runs, "a1+a2"); i < 0 || j < 0 || i > j {
		t.Errorf("runs %v: b1 must run while a is held, and a2 only with a1 (merged into its retry)", runs)
	}
	if n := strings.Count(strings.Join(runs, " "), "a1"); n != 3 {
		t.Errorf("a1 ran %d times, want 3 (two failures, then success): %v", n, runs)
	}
}

// MaxParallel caps the keyed runs of all hooks together.
func TestParallelCapAcrossHooks(t *testing.T) {
	labels := []string{"p1", "p2", "p3", "q1", "q2", "q3"}
	g := newGated(labels...)
	s := parallelSet(g, 4)
	defer s.Stop(time.Second)
	p, q := parallelHook("p", 3), parallelHook("q", 3)
	done := make(chan error, 10)
	for _, l := range labels {
		h := p
		if l[0] == 'q' {
			h = q
		}
		must(t, s.Push(&Task{Hook: h, Queue: "queue-" + h.Name, Key: l, Contexts: []binding.Context{{Binding: l}}, Done: func(err error) { done <- err }}))
	}
	g.holdsAtOnce(t, 4, "MaxParallel 4")
	g.openAll(t, labels, done)
	if g.max != 4 {
		t.Errorf("at most %d runs at once, want 4", g.max)
	}
}

// A task without a key of a hook with parallelism runs alone for the hook,
// even when its keyed tasks are in another queue.
func TestParallelAloneAcrossQueues(t *testing.T) {
	g := newGated("sched", "k")
	s := parallelSet(g, 0)
	defer s.Stop(time.Second)
	p := parallelHook("p", 4)
	done := make(chan error, 10)
	must(t, s.Push(&Task{Hook: p, Queue: "other", Contexts: []binding.Context{{Binding: "sched"}}, Done: func(err error) { done <- err }}))
	eventually(t, "sched running", func() bool { return g.started("sched") })
	must(t, s.Push(keyed(p, "k", "k", done)))
	time.Sleep(30 * time.Millisecond)
	if g.started("k") {
		t.Fatal("a keyed run started beside the hook's run without a key in another queue")
	}
	g.open("sched")
	eventually(t, "k running", func() bool { return g.started("k") })
	must(t, s.Push(&Task{Hook: p, Queue: "other", Contexts: []binding.Context{{Binding: "sched2"}}, Done: func(err error) { done <- err }}))
	time.Sleep(30 * time.Millisecond)
	if g.started("sched2") {
		t.Fatal("the hook's run without a key started beside its keyed run in another queue")
	}
	g.open("k")
	for range 3 {
		must(t, waitDone(t, done))
	}
}
