package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Bodies bounds the bytes of webhook request bodies held in memory at
// once, all listeners together: what is read of bodies still arriving,
// and the bodies waiting for a slot or whose hooks run. A request is
// charged for what it has received, never for the length it announces,
// so that requests that send a part of a body and wait cost little.
//
// The bodies of one client address hold at most SourceShare of the bytes,
// so that while one address's reviews wait for their slots, another's
// are still read.
type Bodies struct {
	size int64

	mu      sync.Mutex
	held    int64
	sources map[string]int64
	changed chan struct{} // closed and replaced when bytes are given back
}

// NewBodies returns a budget of n bytes; it is raised so that one
// address's share holds at least one review of the largest size.
func NewBodies(n int64) *Bodies {
	return &Bodies{size: max(n, int64(float64(maxReviewBytes+minBodyBuffer)/SourceShare)+1), sources: map[string]int64{}, changed: make(chan struct{})}
}

// take charges n bytes to source, waiting until they are free or ctx
// ends.
func (b *Bodies) take(ctx context.Context, source string, n int64) error {
	for {
		b.mu.Lock()
		if b.held+n <= b.size && b.sources[source]+n <= share(b.size) {
			b.held += n
			b.sources[source] += n
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return errBodiesFull
		}
	}
}

// give gives back n bytes charged to source.
func (b *Bodies) give(source string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	if b.sources[source] -= n; b.sources[source] <= 0 {
		delete(b.sources, source)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

var errBodiesFull = errors.New("the memory for webhook request bodies stayed taken")

// minBodyBuffer is the first buffer a body is read into.
const minBodyBuffer = 4 << 10

// read reads r's body whole, each buffer charged to b before it is
// allocated and grown by doubling as bytes arrive (up to the announced
// length, never beyond maxReviewBytes+1); the caller gives back the
// returned charge once the body is no longer used. A body larger than a
// review ends the reading with an *http.MaxBytesError.
func (b *Bodies) read(ctx context.Context, r *http.Request) (body []byte, charged int64, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, 0, nil
	}
	limit := int64(maxReviewBytes) + 1
	if r.ContentLength >= 0 {
		// One byte beyond the announced length, so the last read sees EOF.
		limit = min(limit, r.ContentLength+1)
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit {
				if limit > maxReviewBytes {
					return nil, charged, &http.MaxBytesError{Limit: maxReviewBytes}
				}
				return nil, charged, errors.New("the body is longer than its Content-Length")
			}
			next := min(max(2*int64(cap(buf)), minBodyBuffer), limit)
			// The old buffer is garbage once copied: the charge is the new one's.
			if err := b.take(ctx, sourceOf(r), next-charged); err != nil {
				return nil, charged, err
			}
			charged = next
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, charged, nil
		}
		if err != nil {
			return nil, charged, err
		}
	}
}

// arrived is a body the gate has read whole; readReview takes its bytes
// without reading them again.
type arrived struct {
	*bytes.Reader
	data []byte
}

func (arrived) Close() error { return nil }
