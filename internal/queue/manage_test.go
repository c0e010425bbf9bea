package queue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// slowRetrySet is a set whose failed runs wait an hour for their retry:
// only DropHook, Drop or RetryNow can move the queue on within a test.
func slowRetrySet(handler Handler) *Set {
	l, _ := logtest.NewNullLogger()
	return NewSet(handler, Options{RetryInitial: time.Hour, RetryMax: time.Hour}, logrus.NewEntry(l))
}

// waitHeld waits until the queue's head has failed n times and waits for
// its retry.
func waitHeld(t *testing.T, s *Set, queue string, n int) {
	t.Helper()
	eventually(t, "the head held after a failure", func() bool {
		for _, q := range s.State() {
			if q.Name == queue && q.Running == nil && len(q.Pending) > 0 && q.Pending[0].Attempts == n && !q.RetryAt.IsZero() {
				return true
			}
		}
		return false
	})
}

// A removed hook's failed run, held for its retry, no longer holds the
// queue: DropHook drops it and every pending task of the hook, tells
// their Done, and the next hook runs at once.
func TestDropHookFreesTheQueueFromItsRetry(t *testing.T) {
	r := &recorder{fail: map[string]int{"a": 100}}
	s := slowRetrySet(r.handle)
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	done := make(chan error, 10)
	fin := func(err error) { done <- err }
	must(t, s.Push(task(a, "a1", fin)))
	waitHeld(t, s, hook.DefaultQueue, 1)
	must(t, s.Push(task(b, "b1", fin)))
	must(t, s.Push(task(a, "a2", fin)))

	if n := s.DropHook("a"); n != 2 {
		t.Errorf("DropHook dropped %d tasks, want 2 (the held retry and the pending one)", n)
	}
	// The dropped tasks' Done is told after the queue is freed, so b's run
	// may finish before them: count the three outcomes, not their order.
	droppedDone, ran := 0, 0
	for range 3 {
		switch err := waitDone(t, done); {
		case errors.Is(err, ErrDropped):
			droppedDone++
		case err == nil:
			ran++
		default:
			t.Errorf("a task's Done got %v, want ErrDropped or b's successful run", err)
		}
	}
	if droppedDone != 2 || ran != 1 {
		t.Errorf("Done told ErrDropped %d times and success %d times, want 2 and 1 (b ran)", droppedDone, ran)
	}
	if got, want := r.snapshot(), [][]string{{"a", "a1"}, {"b", "b1"}}; !equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

// RetryNow runs the held head now rather than after its backoff.
func TestRetryNowSkipsTheBackoff(t *testing.T) {
	r := &recorder{fail: map[string]int{"a": 1}}
	s := slowRetrySet(r.handle)
	defer s.Stop(time.Second)
	a := &hook.Hook{Name: "a"}
	done := make(chan error, 1)
	must(t, s.Push(task(a, "a1", func(err error) { done <- err })))
	waitHeld(t, s, hook.DefaultQueue, 1)

	if n, err := s.RetryNow(hook.DefaultQueue); err != nil || n != 1 {
		t.Fatalf("RetryNow = %d, %v; want 1 task made due", n, err)
	}
	must(t, waitDone(t, done))
	if n := len(r.snapshot()); n != 2 {
		t.Errorf("%d runs, want 2 (the failure, then the retry)", n)
	}
	if _, err := s.RetryNow(hook.DefaultQueue); err == nil || !strings.Contains(err.Error(), "no failed task") {
		t.Errorf("RetryNow with nothing held: %v, want an error saying none waits", err)
	}
	if _, err := s.RetryNow("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), hook.DefaultQueue) {
		t.Errorf("RetryNow of an unknown queue: %v, want an error naming it and the queues there are", err)
	}
}

// A failed key of a parallel hook is retried now by RetryNow, or dropped by
// Drop with its key, leaving the other keys alone.
func TestRetryNowAndDropOfAKey(t *testing.T) {
	g := newGated()
	g.fail["a1"] = 1
	g.fail["b1"] = 100
	s := slowRetrySet(g.handle)
	defer s.Stop(time.Second)
	p := parallelHook("p", 2)
	done := make(chan error, 10)
	must(t, s.Push(keyed(p, "a1", "a", done)))
	must(t, s.Push(keyed(p, "b1", "b", done)))
	eventually(t, "both keys held", func() bool {
		q := s.State()[0]
		return len(q.Parallel) == 0 && len(q.Pending) == 2 && !q.Pending[0].RetryAt.IsZero() && !q.Pending[1].RetryAt.IsZero()
	})

	if _, err := s.Drop(hook.DefaultQueue, "p", "c"); err == nil || !strings.Contains(err.Error(), "p [a]") {
		t.Errorf("Drop of a key with nothing pending: %v, want an error listing what is pending", err)
	}
	if n, err := s.Drop(hook.DefaultQueue, "p", "b"); err != nil || n != 1 {
		t.Fatalf("Drop = %d, %v; want b's task dropped", n, err)
	}
	if err := waitDone(t, done); !errors.Is(err, ErrDropped) {
		t.Errorf("Done of the dropped key got %v, want ErrDropped", err)
	}
	if n, err := s.RetryNow(hook.DefaultQueue); err != nil || n != 1 {
		t.Fatalf("RetryNow = %d, %v; want a's task made due", n, err)
	}
	must(t, waitDone(t, done))
	if runs := g.snapshot(); strings.Count(strings.Join(runs, " "), "a1") != 2 || strings.Count(strings.Join(runs, " "), "b1") != 1 {
		t.Errorf("runs %v: want a1 twice (failure, retry) and b1 once (dropped after its failure)", runs)
	}
}

// OldestPending says how long the oldest pending task of each queue has
// waited, and zero once the queue is empty.
func TestOldestPending(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	s := newSet(r)
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	done := make(chan error, 2)
	fin := func(err error) { done <- err }
	must(t, s.Push(task(a, "a1", fin)))
	eventually(t, "a running", func() bool { return s.State()[0].Running != nil })
	if d := s.OldestPending()[hook.DefaultQueue]; d != 0 {
		t.Errorf("with only a running task, the oldest pending is %v, want 0", d)
	}
	pushed := time.Now()
	must(t, s.Push(task(b, "b1", fin)))
	eventually(t, "the pending task's age to grow", func() bool { return s.OldestPending()[hook.DefaultQueue] > 0 })
	if d := s.OldestPending()[hook.DefaultQueue]; d > time.Since(pushed) {
		t.Errorf("oldest pending %v, more than the %v since it was pushed", d, time.Since(pushed))
	}
	close(r.gate)
	must(t, waitDone(t, done))
	must(t, waitDone(t, done))
	eventually(t, "the age back to 0", func() bool { return s.OldestPending()[hook.DefaultQueue] == 0 })
}

// A failed task held for its retry names the command that drops it, in
// the queue's state (debug) and in the log line of its failure.
func TestHeldTaskNamesItsDropCommand(t *testing.T) {
	r := &recorder{fail: map[string]int{"fails.sh": 100}}
	l, logged := logtest.NewNullLogger()
	s := NewSet(r.handle, Options{RetryInitial: time.Hour, RetryMax: time.Hour}, logrus.NewEntry(l))
	defer s.Stop(time.Second)
	must(t, s.Push(task(&hook.Hook{Name: "fails.sh"}, "x", nil)))
	waitHeld(t, s, hook.DefaultQueue, 1)
	want := "hook-operator debug drop main fails.sh"
	if got := s.State()[0].Pending[0].DropCommand; got != want {
		t.Errorf("held task's DropCommand = %q, want %q", got, want)
	}
	// The failure is logged just after the task is held, outside the
	// queue's lock: wait for the line.
	var toDrop string
	eventually(t, "the failure's log line", func() bool {
		for _, e := range logged.AllEntries() {
			if e.Message == "hook failed; retrying" {
				toDrop, _ = e.Data["toDrop"].(string)
				return true
			}
		}
		return false
	})
	if toDrop != want {
		t.Errorf("the failure's log line says toDrop=%q, want %q", toDrop, want)
	}
}

func TestDropCommandQuotes(t *testing.T) {
	for _, tt := range []struct{ queue, hook, key, want string }{
		{"main", "fails.sh", "", "hook-operator debug drop main fails.sh"},
		{"main", "dir/a b.sh", "configmap/ns/x", "hook-operator debug drop main 'dir/a b.sh' --key configmap/ns/x"},
		{"q", "it's.sh", "", `hook-operator debug drop q 'it'\''s.sh'`},
		{"q", "esc\x1b[2J.sh", "", `hook-operator debug drop q $'esc\x1b[2J.sh'`},
		// Each byte escaped: a C1 control is two bytes in UTF-8, a
		// right-to-left override three; bytes that are not UTF-8 stay
		// themselves, so the command names the same file.
		{"q", "c1\u0085.sh", "", `hook-operator debug drop q $'c1\xc2\x85.sh'`},
		{"q", "rtl\u202e.sh", "", `hook-operator debug drop q $'rtl\xe2\x80\xae.sh'`},
		{"q", "bad\xff.sh", "", `hook-operator debug drop q $'bad\xff.sh'`},
		{"q", "é.sh", "", `hook-operator debug drop q 'é.sh'`},
	} {
		if got := DropCommand(tt.queue, tt.hook, tt.key); got != tt.want {
			t.Errorf("DropCommand(%q, %q, %q) = %s, want %s", tt.queue, tt.hook, tt.key, got, tt.want)
		}
	}
}
