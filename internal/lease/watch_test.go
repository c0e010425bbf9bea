package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

func named(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	return u
}

// The Watcher reports each refusal (the first as first), opens the watch
// again after a refusal and after a break, hands on each event in order,
// and says whether the watch is open.
func TestWatcherReopens(t *testing.T) {
	refused := errors.New("forbidden")
	watches := make(chan *watch.FakeWatcher, 2)
	var mu sync.Mutex
	var opens int
	var firsts []bool
	events := make(chan string, 8)
	w := &Watcher{
		Open: func(context.Context) (watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			opens++
			if opens <= 2 {
				return nil, refused
			}
			fw := watch.NewFake()
			watches <- fw
			return fw, nil
		},
		Event: func(ev watch.Event) { events <- ev.Object.(*unstructured.Unstructured).GetName() },
		Retry: time.Millisecond,
		Failed: func(err error, first bool) {
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(err, refused) {
				t.Errorf("Failed got %v", err)
			}
			firsts = append(firsts, first)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()

	next := func() *watch.FakeWatcher {
		t.Helper()
		select {
		case fw := <-watches:
			return fw
		case <-time.After(10 * time.Second):
			t.Fatal("the watch was not opened within 10 s")
			return nil
		}
	}
	fw := next()
	fw.Add(named("one"))
	fw.Modify(named("two"))
	for _, want := range []string{"one", "two"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %s not handed on within 10 s", want)
		}
	}
	if !w.Watching() {
		t.Error("Watching() is false while the watch is open")
	}
	fw.Stop() // the watch breaks
	fw = next()
	fw.Add(named("three"))
	select {
	case got := <-events:
		if got != "three" {
			t.Fatalf("event %s after the break, want three", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the reopened watch within 10 s")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context ending")
	}
	if w.Watching() {
		t.Error("Watching() is true after Run returned")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(firsts) != 2 || !firsts[0] || firsts[1] {
		t.Errorf("Failed's first flags: %v; want [true false]", firsts)
	}
}
