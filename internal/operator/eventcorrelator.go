package operator

import (
	"strings"
	"time"

	"k8s.io/utils/lru"
)

// eventCorrelator folds repeats of an Event into one series and limits the
// Events written per object. It is a pure function of the occurrences it
// observes (their times included), so tests need no clock.
type eventCorrelator struct {
	series *lru.Cache // object, reason and message -> *eventSeries
	limits *lru.Cache // objectKey -> *tokenBucket
}

// eventSeries is an Event and its repeats.
type eventSeries struct {
	// namespace and name are the Event's, once written.
	namespace, name string
	count           int64
	first, last     time.Time
}

func newEventCorrelator() *eventCorrelator {
	return &eventCorrelator{series: lru.New(eventCacheSize), limits: lru.New(eventCacheSize)}
}

// observe counts ev in its series and reports whether to write the series
// now, or only count ev because ev's object has had too many Events lately.
func (c *eventCorrelator) observe(ev queuedEvent) (*eventSeries, bool) {
	object := objectKey(ev.ref)
	key := object + "\x00" + ev.reason + "\x00" + ev.message
	var s *eventSeries
	if v, ok := c.series.Get(key); ok {
		s = v.(*eventSeries)
	} else {
		s = &eventSeries{first: ev.at}
		c.series.Add(key, s)
	}
	s.count++
	s.last = ev.at
	var b *tokenBucket
	if v, ok := c.limits.Get(object); ok {
		b = v.(*tokenBucket)
	} else {
		b = &tokenBucket{}
		c.limits.Add(object, b)
	}
	return s, b.take(ev.at, eventBurst, eventRefill)
}

func objectKey(r objectRef) string {
	return strings.Join([]string{r.APIVersion, r.Kind, r.Namespace, r.Name, string(r.UID)}, "\x00")
}

// tokenBucket allows burst takes at once, then one per refill.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

func (b *tokenBucket) take(now time.Time, burst int, refill time.Duration) bool {
	switch {
	case b.last.IsZero():
		b.tokens, b.last = float64(burst), now
	case now.After(b.last): // occurrences may arrive slightly out of order
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.last))/float64(refill))
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
