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
	"github.com/hook-operator/hook-operator/internal/poll"
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

// staysWaiting checks that, a moment later, none of labels has started:
// why says what should hold them.
func (g *gated) staysWaiting(t *testing.T, why string, labels ...string) {
	t.Helper()
	time.Sleep(30 * time.Millisecond)
	for _, l := range labels {
		if g.started(l) {
			t.Fatalf("%s started %s (runs %v)", l, why, g.snapshot())
		}
	}
}

// openAll opens the gates of labels and waits for as many tasks to end,
// each without an error.
func (g *gated) openAll(t *testing.T, labels []string, done <-chan error) {
	t.Helper()
	for _, l := range labels {
		g.open(l)
	}
	waitAllDone(t, done, len(labels))
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

// A parallelFixture is a set whose runs g gates, a hook p with
// parallelism, and the channel its tasks' Done report to.
type parallelFixture struct {
	g    *gated
	s    *Set
	p    *hook.Hook
	done chan error
}

// newParallelFixture starts a set without MaxParallel (stopped when the
// test ends) for the hook p with the parallelism given, its runs gated at
// labels.
func newParallelFixture(t *testing.T, parallelism int, labels ...string) *parallelFixture {
	g := newGated(labels...)
	s := parallelSet(g, 0)
	t.Cleanup(func() { s.Stop(time.Second) })
	return &parallelFixture{g: g, s: s, p: parallelHook("p", parallelism), done: make(chan error, 10)}
}

// push queues p's task of label under key.
func (f *parallelFixture) push(t *testing.T, label, key string) {
	t.Helper()
	must(t, f.s.Push(keyed(f.p, label, key, f.done)))
}

// pushUnkeyed queues p's task of label without a key, in queue.
func (f *parallelFixture) pushUnkeyed(t *testing.T, label, queue string) {
	t.Helper()
	must(t, f.s.Push(&Task{Hook: f.p, Queue: queue, Contexts: []binding.Context{{Binding: label}}, Done: func(err error) { f.done <- err }}))
}

func parallelHook(name string, n int) *hook.Hook {
	h := &hook.Hook{Name: name}
	h.Config.Settings.Parallelism = n
	return h
}

func keyed(h *hook.Hook, label, key string, done chan<- error) *Task {
	return &Task{Hook: h, Key: key, Contexts: []binding.Context{{Binding: label}}, Done: func(err error) { done <- err }}
}

// eventually waits up to 5s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Second, what, cond)
}

// Tasks for different keys run at once, never more than the hook's
// parallelism; the rest wait and run as slots free up.
func TestParallelRunsUpToTheHooksParallelism(t *testing.T) {
	labels := []string{"a", "b", "c", "d", "e", "f"}
	f := newParallelFixture(t, 3, labels...)
	for _, l := range labels {
		f.push(t, l, l)
	}
	f.g.holdsAtOnce(t, 3, "parallelism 3")
	f.g.openAll(t, labels, f.done)
	if f.g.maxHook["p"] != 3 {
		t.Errorf("at most %d runs at once, want 3", f.g.maxHook["p"])
	}
}

// A key's tasks run one at a time and in order; those that pile up while
// one runs are merged into its next run. Other keys go on meanwhile.
func TestParallelKeyInOrderAndMerged(t *testing.T) {
	f := newParallelFixture(t, 4, "a1", "b1")
	f.push(t, "a1", "a")
	eventually(t, "a1 running", func() bool { return f.g.started("a1") })
	f.push(t, "a2", "a")
	f.push(t, "b1", "b")
	f.push(t, "a3", "a")
	eventually(t, "b1 running beside a1", func() bool { return f.g.started("b1") })
	f.g.staysWaiting(t, "while a1 ran", "a2")
	f.g.open("a1")
	f.g.open("b1")
	waitAllDone(t, f.done, 4)
	if runs := f.g.snapshot(); !slices.Contains(runs, "a2+a3") || len(runs) != 3 {
		t.Errorf("runs %v, want a1, b1 and a2+a3 (merged, in order)", runs)
	}
}

// A task without a key (a Synchronization) is a barrier: it waits for the
// keyed runs before it, runs alone, and nothing behind it starts earlier
// (a task of the same hook behind it is merged into its run, after it).
func TestParallelBarrier(t *testing.T) {
	f := newParallelFixture(t, 4, "x", "sync")
	f.push(t, "x", "x")
	eventually(t, "x running", func() bool { return f.g.started("x") })
	f.pushUnkeyed(t, "sync", "")
	f.push(t, "y", "y")
	f.g.staysWaiting(t, "while x ran: the barrier and what is behind it must wait", "sync", "y")
	f.g.open("x")
	eventually(t, "sync running", func() bool { return f.g.started("sync") })
	f.g.open("sync")
	waitAllDone(t, f.done, 3)
	if runs := f.g.snapshot(); !slices.Equal(runs, []string{"x", "sync+y"}) {
		t.Errorf("runs %v, want x, then sync with y merged after it", runs)
	}
}

// A failing key is retried after its own backoff and holds only itself:
// other keys run meanwhile, and the key's later tasks wait for it.
func TestParallelFailureHoldsOnlyItsKey(t *testing.T) {
	f := newParallelFixture(t, 2)
	f.g.fail["a1"] = 2
	f.push(t, "a1", "a")
	eventually(t, "a1 failed once", func() bool { return f.g.started("a1") })
	f.push(t, "a2", "a")
	f.push(t, "b1", "b")
	waitAllDone(t, f.done, 3)
	runs := f.g.snapshot()
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
	f := newParallelFixture(t, 4, "sched", "k")
	f.pushUnkeyed(t, "sched", "other")
	eventually(t, "sched running", func() bool { return f.g.started("sched") })
	f.push(t, "k", "k")
	f.g.staysWaiting(t, "beside the hook's run without a key in another queue", "k")
	f.g.open("sched")
	eventually(t, "k running", func() bool { return f.g.started("k") })
	f.pushUnkeyed(t, "sched2", "other")
	f.g.staysWaiting(t, "beside the hook's keyed run in another queue", "sched2")
	f.g.open("k")
	waitAllDone(t, f.done, 3)
}
