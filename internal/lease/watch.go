package lease

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// Watcher follows Leases through a watch that it opens again when it
// breaks or is refused.
type Watcher struct {
	// Open starts the watch (and may list first, to know where to start
	// it from).
	Open func(ctx context.Context) (watch.Interface, error)
	// Event is called with each event, in order, one at a time.
	Event func(watch.Event)
	// Retry is how long after a break or a refusal the watch is opened
	// again.
	Retry time.Duration
	// Failed is called with each error of Open while the context lasts;
	// first is true for the first one of the Watcher's life (the one
	// worth a warning: it usually means RBAC without list or watch).
	Failed func(err error, first bool)

	watching atomic.Bool
}

// Run watches until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	failed := false
	for ctx.Err() == nil {
		wi, err := w.Open(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if w.Failed != nil {
				w.Failed(err, !failed)
			}
			failed = true
		case err == nil:
			w.watching.Store(true)
			w.follow(ctx, wi)
			w.watching.Store(false)
			wi.Stop()
		}
		loop.Sleep(ctx, w.Retry)
	}
}

// Watching reports whether the watch is open now.
func (w *Watcher) Watching() bool { return w.watching.Load() }

func (w *Watcher) follow(ctx context.Context, wi watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			w.Event(ev)
		}
	}
}
