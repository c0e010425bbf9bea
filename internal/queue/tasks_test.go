package queue

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// Tasks counts each hook's tasks in each queue, the running one with the
// pending; Waited is how long a run waited before it started: since its
// task was queued, or for a retry since the failed run before it ended.
func TestTasksAndWaited(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var waits []time.Duration
	failed := false
	l, _ := logtest.NewNullLogger()
	s := NewSet(func(ctx context.Context, t *Task) error {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, t.Waited())
		if t.Hook.Name == "b" && !failed {
			failed = true
			return errors.New("boom")
		}
		return nil
	}, Options{RetryInitial: 100 * time.Millisecond, RetryMax: 100 * time.Millisecond}, logrus.NewEntry(l))
	defer s.Stop(time.Second)
	a, b := &hook.Hook{Name: "a"}, &hook.Hook{Name: "b"}
	done := make(chan error, 10)
	fin := func(err error) { done <- err }

	must(t, s.Push(task(a, "first", fin)))
	time.Sleep(50 * time.Millisecond) // the worker takes it and waits at the gate
	must(t, s.Push(task(b, "b1", fin)))
	must(t, s.Push(task(a, "a2", fin)))
	if got, want := s.Tasks(), map[string]map[string]int{"main": {"a": 2, "b": 1}}; !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("Tasks() = %v, want %v", got, want)
	}
	time.Sleep(100 * time.Millisecond) // b1 waits behind first
	for range 4 {                      // first, b1 (fails), b1 again, a2
		gate <- struct{}{}
	}
	waitAllDone(t, done, 3)
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 4 {
		t.Fatalf("%d runs, want 4", len(waits))
	}
	if waits[0] > 40*time.Millisecond {
		t.Errorf("the first run waited %v in an idle queue", waits[0])
	}
	if waits[1] < 100*time.Millisecond {
		t.Errorf("b1 waited %v, want the 100ms and more it waited behind the first run", waits[1])
	}
	// The retry waited its backoff (100ms ±20%), counted from the failure.
	if waits[2] < 75*time.Millisecond || waits[2] > 500*time.Millisecond {
		t.Errorf("b1's retry waited %v, want about its 100ms backoff", waits[2])
	}
	if got := s.Tasks(); len(got["main"]) != 0 {
		t.Errorf("Tasks() = %v after every run ended, want none in main", got)
	}
}
