package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// runLog records what each run got, as "binding:event:name@version" (the
// version is the object's Raw), and holds runs while held is open.
type runLog struct {
	mu   sync.Mutex
	runs [][]string
	// started gets a value as each run starts; release lets it go on,
	// with the error it returns.
	started chan struct{}
	release chan error
}

func newRunLog() *runLog {
	return &runLog{started: make(chan struct{}, 16), release: make(chan error)}
}

func (r *runLog) handle(ctx context.Context, t *Task) error {
	var run []string
	for _, c := range t.Contexts {
		s := c.Binding + ":" + c.Type
		if c.Object != nil {
			s = fmt.Sprintf("%s:%s:%s@%s", c.Binding, c.WatchEvent, c.Object.Name, c.Object.Raw)
		}
		run = append(run, s)
	}
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	r.started <- struct{}{}
	select {
	case err := <-r.release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *runLog) run(t *testing.T, i int) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.runs) {
		t.Fatalf("run %d never started; runs: %q", i, r.runs)
	}
	return r.runs[i]
}

func event(h *hook.Hook, watchEvent, name string, version int, done chan<- error) *Task {
	return &Task{Hook: h, Contexts: []binding.Context{{
		Binding: "cms", Type: binding.TypeEvent, WatchEvent: watchEvent,
		Object: &binding.Object{Namespace: "ns", Name: name, Raw: []byte(fmt.Sprint(version))},
	}}, Done: func(err error) { done <- err }}
}

// objectFixture returns a run log, a set that runs with it (stopped when
// the test ends), the hook h and a channel for the tasks' Done.
func objectFixture(t *testing.T, h *hook.Hook) (*runLog, *Set, *hook.Hook, chan error) {
	r := newRunLog()
	l, _ := logtest.NewNullLogger()
	s := NewSet(r.handle, Options{RetryInitial: time.Millisecond, RetryMax: time.Millisecond}, logrus.NewEntry(l))
	t.Cleanup(func() { s.Stop(time.Second) })
	return r, s, h, make(chan error, 64)
}

// awaitStart waits for the next run to start.
func (r *runLog) awaitStart(t *testing.T, what string) {
	t.Helper()
	receive(t, r.started, 5*time.Second, what+" never started")
}

// next ends the run in progress with err and waits for the next to start.
func (r *runLog) next(t *testing.T, err error, what string) {
	t.Helper()
	r.release <- err
	r.awaitStart(t, what)
}

// wantRun checks what run i got; what names it for the message.
func (r *runLog) wantRun(t *testing.T, i int, what string, want []string) {
	t.Helper()
	if got := r.run(t, i); !slices.Equal(got, want) {
		t.Errorf("%s got\n  %q\nwant\n  %q", what, got, want)
	}
}

// holdFirstRun pushes h's Added event of x, at version 0, and waits for
// its run to start: it holds the queue until released.
func (r *runLog) holdFirstRun(t *testing.T, s *Set, h *hook.Hook, done chan<- error) {
	t.Helper()
	must(t, s.Push(event(h, "Added", "x", 0, done)))
	r.awaitStart(t, "the first run")
}

// pushModified pushes h's Modified events of x at versions from to to.
func pushModified(t *testing.T, s *Set, h *hook.Hook, done chan<- error, from, to int) {
	t.Helper()
	for v := from; v <= to; v++ {
		must(t, s.Push(event(h, "Modified", "x", v, done)))
	}
}

// expect lists "cms:<event>:<name>@<version>" for each version.
func expect(event, name string, versions ...int) []string {
	var out []string
	for _, v := range versions {
		out = append(out, fmt.Sprintf("cms:%s:%s@%d", event, name, v))
	}
	return out
}

// While a run holds the queue, 20 updates of one object leave
// MaxObjectContexts of its contexts waiting: the first seven, and the
// newest in the place of the eighth. Every task's Done is called, and
// another object's contexts are not touched.
func TestObjectContextsWaitingAreCapped(t *testing.T) {
	r, s, h, done := objectFixture(t, &hook.Hook{Name: "h"})

	r.holdFirstRun(t, s, h, done)
	pushModified(t, s, h, done, 1, 3)
	must(t, s.Push(event(h, "Modified", "y", 1, done)))
	pushModified(t, s, h, done, 4, 20)
	r.next(t, nil, "the second run")
	r.release <- nil
	waitAllDone(t, done, 22)
	want := append(expect("Modified", "x", 1, 2, 3), expect("Modified", "y", 1)...)
	want = append(want, expect("Modified", "x", 4, 5, 6, 7, 20)...)
	r.wantRun(t, 1, "the second run", want)
}

// A context of another type (here a Synchronization) of the hook starts
// an object's count again: no event moves before it.
func TestObjectContextsCountAgainAfterAnotherType(t *testing.T) {
	r, s, h, done := objectFixture(t, &hook.Hook{Name: "h"})

	r.holdFirstRun(t, s, h, done)
	pushModified(t, s, h, done, 1, 8)
	must(t, s.Push(&Task{Hook: h, Contexts: []binding.Context{{Binding: "cms", Type: binding.TypeSynchronization}}}))
	pushModified(t, s, h, done, 9, 11)
	r.next(t, nil, "the second run")
	r.release <- nil
	want := append(expect("Modified", "x", 1, 2, 3, 4, 5, 6, 7, 8), "cms:Synchronization")
	want = append(want, expect("Modified", "x", 9, 10, 11)...)
	r.wantRun(t, 1, "the second run", want)
}

// A failing run keeps its contexts for the retry; what waits meanwhile
// joins it within MaxObjectContexts an object, the newest last, and the
// event types kept in their order.
func TestObjectContextsOfARetryAreCapped(t *testing.T) {
	r, s, h, done := objectFixture(t, &hook.Hook{Name: "h"})

	r.holdFirstRun(t, s, h, done)
	pushModified(t, s, h, done, 1, 5)
	r.next(t, nil, "the second run")
	pushModified(t, s, h, done, 6, 30)
	must(t, s.Push(event(h, "Deleted", "x", 31, done)))
	r.next(t, errors.New("boom"), "the retry") // held for its retry, which takes the rest
	r.release <- nil
	want := expect("Modified", "x", 1, 2, 3, 4, 5, 6, 7)
	want = append(want, expect("Deleted", "x", 31)...)
	r.wantRun(t, 2, "the retry", want)
	waitAllDone(t, done, 32)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		if len(q.objects) != 0 {
			t.Errorf("queue %s still counts %d objects with nothing pending", q.name, len(q.objects))
		}
	}
}

// The hooks with parallelism cap an object's contexts the same way: they
// wait under its key.
func TestObjectContextsOfAKeyAreCapped(t *testing.T) {
	r, s, h, done := objectFixture(t, parallelHook("p", 2))
	keyedEvent := func(v int) *Task {
		e := event(h, "Modified", "x", v, done)
		e.Key = "ns/x"
		return e
	}

	must(t, s.Push(keyedEvent(0)))
	r.awaitStart(t, "the first run")
	for v := 1; v <= 12; v++ {
		must(t, s.Push(keyedEvent(v)))
	}
	r.next(t, nil, "the second run")
	r.release <- nil
	r.wantRun(t, 1, "the second run", expect("Modified", "x", 1, 2, 3, 4, 5, 6, 7, 12))
}
