package dryrun

import (
	"context"
	"sync"

	"github.com/hook-operator/hook-operator/internal/executor"
)

// perRun keeps one value per hook run (keyed by executor.RunID): runs of
// different queues apply their operations at the same time, and each run's
// changes are reported on their own.
type perRun[T any] struct {
	mu     sync.Mutex
	values map[uint64]T
}

// get returns the value of ctx's run, made with newValue on first use.
func (p *perRun[T]) get(ctx context.Context, newValue func() T) T {
	id := executor.RunID(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.values == nil {
		p.values = map[uint64]T{}
	}
	v, ok := p.values[id]
	if !ok {
		v = newValue()
		p.values[id] = v
	}
	return v
}

// take returns and forgets the value of run id.
func (p *perRun[T]) take(id uint64) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.values[id]
	delete(p.values, id)
	return v, ok
}
