package replay

import (
	"context"
	"sort"
	"time"

	"github.com/hook-operator/hook-operator/internal/executor"
)

// pendingRequeue is a Requeue request waiting for the virtual clock.
type pendingRequeue struct {
	at  time.Time
	seq int // orders requests due at the same time
	r   executor.RequeueRequest
}

func requeueKey(r executor.RequeueRequest) string {
	return r.Binding.Hook.Name + "\x00" + r.Binding.Name() + "\x00" + r.Namespace + "\x00" + r.Name
}

// requeue records a request as the live runtime does: at most one pending
// per hook, binding and object, the earlier one winning.
func (e *engine) requeue(r executor.RequeueRequest) {
	at := e.now.Add(r.After)
	key := requeueKey(r)
	for i, p := range e.requeues {
		if requeueKey(p.r) != key {
			continue
		}
		if !p.at.After(at) {
			return
		}
		e.requeues = append(e.requeues[:i], e.requeues[i+1:]...)
		break
	}
	e.seq++
	e.requeues = append(e.requeues, pendingRequeue{at: at, seq: e.seq, r: r})
}

// wait advances the clock by d, running each Requeue request that falls
// due at its time, in time order.
func (e *engine) wait(ctx context.Context, d time.Duration) error {
	end := e.now.Add(d)
	for {
		sort.SliceStable(e.requeues, func(i, j int) bool {
			a, b := e.requeues[i], e.requeues[j]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at)
			}
			return a.seq < b.seq
		})
		if len(e.requeues) == 0 || e.requeues[0].at.After(end) {
			break
		}
		p := e.requeues[0]
		e.requeues = e.requeues[1:]
		if p.at.After(e.now) {
			e.now = p.at
		}
		c, ok := executor.RequeueContext(p.r)
		if !ok {
			continue // the object is gone: nothing to run, as live
		}
		e.tasks = append(e.tasks, executor.NewTask(p.r.Binding.Hook, &p.r.Binding.Config().Common, c))
		if err := e.drain(ctx); err != nil {
			return err
		}
	}
	e.now = end
	return nil
}
