package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Slots bound the webhook requests whose hooks run at once, all listeners
// together, three ways: by count (--webhook-max-concurrent); by the memory
// their hooks' processes may use (--webhook-hook-memory), each review
// counted at HookMemory of its size; and by source, where one client
// address holds at most SourceShare of the count and of the memory, so
// that a review from another address finds room at once however many one
// address sends. A request takes its place once its body has arrived (its
// size is then known) and gives it back when it is answered.
type Slots struct {
	n      int
	memory int64 // 0: not bounded

	mu      sync.Mutex
	held    int
	used    int64
	sources map[string]*holding
	changed chan struct{} // closed and replaced when a place is given back
}

// holding is what one source holds.
type holding struct {
	n      int
	memory int64
}

// NewSlots returns n slots (at least 1) whose hooks may use memory bytes
// together (0: not bounded).
func NewSlots(n int, memory int64) *Slots {
	return &Slots{n: max(n, 1), memory: max(memory, 0), sources: map[string]*holding{}, changed: make(chan struct{})}
}

// The memory a review's hook is counted at: a process (bash, and jq or
// python under it) takes a few MiB before it reads anything, and one that
// parses the review holds it many times over. jq 1.6 held a review of 7.8
// MB 2.4 times when it was one long string, 6.5 times as 400,000 small
// keys and 32 times as an array of small objects (18, 56 and 230 MB): the
// last, which any client can send, is the bound. A review of the usual
// few KiB counts a little over 8 MiB, so that the default of the chart
// (128 MiB) runs about 15 of them at once.
const (
	hookProcessBytes = 8 << 20
	hookBytesFactor  = 32
)

// HookMemory is the memory the hook of a review of size bytes is counted
// at: 8 MiB and 32 times the review.
func HookMemory(size int64) int64 { return hookProcessBytes + hookBytesFactor*size }

// SourceShare is the share of the slots, and of the hooks' memory, that
// the requests of one address may hold at once: the rest stays for other
// addresses (another API server, or the API server while a pod floods the
// port).
const SourceShare = 0.75

// share is SourceShare of n, at least 1 (of a count) or n itself when
// smaller than that.
func share(n int64) int64 { return max(int64(float64(n)*SourceShare), min(n, 1)) }

// errNoSlot says why a request found no place; take's caller words it.
var errNoSlot = errors.New("no slot")

// take takes a place for a request from source whose review has size
// bytes, waiting until one is free or ctx ends. A review counted at more
// memory than a source may hold is counted at that share, so that it still
// runs, with no other of its source's beside it.
func (s *Slots) take(ctx context.Context, source string, size int64) (give func(), err error) {
	weight := int64(0)
	if s.memory > 0 {
		weight = min(HookMemory(size), share(s.memory))
	}
	for {
		s.mu.Lock()
		h := s.sources[source]
		if h == nil {
			h = &holding{}
		}
		if s.fits(h, weight) {
			s.held, s.used = s.held+1, s.used+weight
			h.n, h.memory = h.n+1, h.memory+weight
			s.sources[source] = h
			s.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { s.give(source, weight) }) }, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errNoSlot
		}
	}
}

// fits reports whether a request of weight from a source that holds h
// may take a place now.
func (s *Slots) fits(h *holding, weight int64) bool {
	if s.held >= s.n || int64(h.n) >= share(int64(s.n)) {
		return false
	}
	return s.memory == 0 || s.used+weight <= s.memory && h.memory+weight <= share(s.memory)
}

func (s *Slots) give(source string, weight int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.sources[source]
	s.held, s.used = s.held-1, s.used-weight
	h.n, h.memory = h.n-1, h.memory-weight
	if h.n == 0 {
		delete(s.sources, source)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Held returns the places taken, and the memory they are counted at.
func (s *Slots) Held() (n int, memory int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held, s.used
}

// busy words why a request from source found no place within its wait.
func (s *Slots) busy(source string, size int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.sources[source]
	switch {
	case h != nil && int64(h.n) >= share(int64(s.n)):
		return fmt.Sprintf("the client's address held its %d of the %d webhook slots the whole time", share(int64(s.n)), s.n)
	case s.held >= s.n:
		return fmt.Sprintf("every one of the %d webhook slots stayed busy", s.n)
	}
	return fmt.Sprintf("the hooks of the reviews in flight held the %s of --webhook-hook-memory the whole time (this review's hook counts %s)",
		limit.Size(s.memory), limit.Size(min(HookMemory(size), share(s.memory))))
}
