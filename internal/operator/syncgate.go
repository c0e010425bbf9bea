package operator

import (
	"context"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/watch"
)

// syncGate holds back a binding's Synchronization, and the events after
// it, until every binding whose snapshot its contexts carry (the members of
// its group, the bindings of its includeSnapshotsFrom) has delivered its
// own Synchronization. Without it, a Group context could show a member's
// snapshot empty only because that member's watch had not listed yet.
// Bindings whose kind is not served deliver nothing and are not waited for.
type syncGate struct {
	mu        sync.Mutex
	delivered map[*watch.Binding]bool
	// unserved are bindings found waiting for their kind.
	unserved map[*watch.Binding]bool
	// held are the pushes of bindings whose dependencies have not delivered
	// yet, in order.
	held map[*watch.Binding][]func()
	deps map[*watch.Binding][]*watch.Binding
}

func newSyncGate(bindings []*watch.Binding) *syncGate {
	g := &syncGate{
		delivered: map[*watch.Binding]bool{},
		unserved:  map[*watch.Binding]bool{},
		held:      map[*watch.Binding][]func(){},
		deps:      map[*watch.Binding][]*watch.Binding{},
	}
	for _, b := range bindings {
		names := map[string]bool{}
		cfg := b.Config()
		for _, n := range groupMembers(b.Hook, cfg.Group) {
			names[n] = true
		}
		for _, n := range cfg.IncludeSnapshotsFrom {
			names[n] = true
		}
		delete(names, cfg.Name)
		for _, o := range bindings {
			if o.Hook == b.Hook && names[o.Config().Name] {
				g.deps[b] = append(g.deps[b], o)
			}
		}
	}
	return g
}

// synchronized records b's Synchronization and runs push now, or holds it
// until b's dependencies have delivered theirs. It releases whatever b's
// delivery unblocks. Called under b's lock: it takes no binding's lock.
func (g *syncGate) synchronized(b *watch.Binding, push func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.delivered[b] = true
	g.held[b] = append(g.held[b], push)
	g.releaseLocked()
}

// event runs push now, or after b's held Synchronization.
func (g *syncGate) event(b *watch.Binding, push func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.held[b]) > 0 {
		g.held[b] = append(g.held[b], push)
		return
	}
	push()
}

func (g *syncGate) releaseLocked() {
	for b, pushes := range g.held {
		if len(pushes) == 0 || !g.readyLocked(b) {
			continue
		}
		for _, p := range pushes {
			p()
		}
		delete(g.held, b)
	}
}

func (g *syncGate) readyLocked(b *watch.Binding) bool {
	for _, d := range g.deps[b] {
		if !g.delivered[d] && !g.unserved[d] {
			return false
		}
	}
	return true
}

// watchUnserved notices, once a second, dependencies whose kind is not
// served (their Synchronization will not come) and releases what waits for
// them. Binding locks are taken with the gate's lock released.
func (g *syncGate) watchUnserved(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		var pending []*watch.Binding
		for b, pushes := range g.held {
			if len(pushes) == 0 {
				continue
			}
			for _, d := range g.deps[b] {
				if !g.delivered[d] {
					pending = append(pending, d)
				}
			}
		}
		g.mu.Unlock()
		if len(pending) == 0 {
			continue
		}
		var unserved []*watch.Binding
		for _, d := range pending {
			if d.Waiting() != "" {
				unserved = append(unserved, d)
			}
		}
		g.mu.Lock()
		for _, d := range unserved {
			g.unserved[d] = true
		}
		g.releaseLocked()
		g.mu.Unlock()
	}
}
