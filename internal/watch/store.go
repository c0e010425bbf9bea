package watch

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// objectStore is an informer's cache and its notifications in one. The
// reflector calls it from its own goroutine for each watch event and each
// list, and it makes the entry, updates the cache and hands the change to
// the informer's bindings right there, in that order.
//
// client-go's informer puts a FIFO between the reflector and the handlers,
// drained by a goroutine of its own: every event then wakes that goroutine,
// a thread wake-up on a machine with idle cores, and passes through the
// FIFO's lock and bookkeeping. The notifications are the same as its
// (RealFIFO's): a watch event for an object the cache holds is an update,
// else an add; a list (Replace) first deletes what it no longer holds (with
// the last state the cache had, which client-go wraps as a
// DeletedFinalStateUnknown), then adds or updates its objects in list
// order.
type objectStore struct {
	// transform makes the entry of a decoded object (and returns an entry
	// as it is).
	transform cache.TransformFunc
	// notify hands one change to the bindings: an event name, the entry
	// before (updates, else nil), and the entry after (for a deletion, the
	// object's last state).
	notify func(event string, old, e *entry)

	mu    sync.RWMutex
	items map[string]*entry
	// synced is set once the first list has been handed over.
	synced atomic.Bool
	// listed, when set, is called when the first list has been handed
	// over (and again after a relist: it must be idempotent).
	listed func()
}

var (
	_ cache.ReflectorStore    = (*objectStore)(nil)
	_ cache.TransformingStore = (*objectStore)(nil)
)

// Transformer lets the reflector make entries as a streamed list arrives,
// rather than hold every decoded object until its end.
func (s *objectStore) Transformer() cache.TransformFunc { return s.transform }

func (s *objectStore) Add(obj any) error    { return s.upsert(obj) }
func (s *objectStore) Update(obj any) error { return s.upsert(obj) }

func (s *objectStore) upsert(obj any) error {
	e, key, err := s.entry(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.items[key]
	s.items[key] = e
	s.mu.Unlock()
	if old != nil {
		s.notify(hook.Modified, old, e)
	} else {
		s.notify(hook.Added, nil, e)
	}
	return nil
}

// Delete removes the object; the bindings get its last state, the one in
// the DELETED event.
func (s *objectStore) Delete(obj any) error {
	e, key, err := s.entry(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.items, key)
	s.mu.Unlock()
	s.notify(hook.Deleted, nil, e)
	return nil
}

// Replace makes list the cache's content, after a list or a relist.
func (s *objectStore) Replace(list []any, _ string) error {
	entries := make([]*entry, 0, len(list))
	keys := make([]string, 0, len(list))
	items := make(map[string]*entry, len(list))
	for _, obj := range list {
		e, key, err := s.entry(obj)
		if err != nil {
			return err
		}
		entries, keys = append(entries, e), append(keys, key)
		items[key] = e
	}
	s.mu.Lock()
	old := s.items
	s.items = items
	s.mu.Unlock()
	for key, e := range old {
		if _, ok := items[key]; !ok {
			s.notify(hook.Deleted, nil, e)
		}
	}
	for n, e := range entries {
		if prev := old[keys[n]]; prev != nil {
			s.notify(hook.Modified, prev, e)
		} else {
			s.notify(hook.Added, nil, e)
		}
	}
	s.synced.Store(true)
	if s.listed != nil {
		s.listed()
	}
	return nil
}

// Resync does nothing: informers have no resync period.
func (s *objectStore) Resync() error { return nil }

// entry returns obj's entry and cache key (see entryKey).
func (s *objectStore) entry(obj any) (*entry, string, error) {
	t, err := s.transform(obj)
	if err != nil {
		return nil, "", err
	}
	e, ok := t.(*entry)
	if !ok {
		return nil, "", fmt.Errorf("unexpected object %T in a watch", t)
	}
	return e, entryKey(e.Namespace, e.Name), nil
}

// get returns the entry of key, or nil.
func (s *objectStore) get(key string) *entry {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.items[key]
}

// list returns the cached entries.
func (s *objectStore) list() []*entry {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*entry, 0, len(s.items))
	for _, e := range s.items {
		out = append(out, e)
	}
	return out
}

// len returns how many objects the cache holds.
func (s *objectStore) len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}
