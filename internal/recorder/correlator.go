package recorder

import (
	"strings"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"
)

// eventCorrelator folds repeats of an Event into one series and limits the
// Events written per object. It is a pure function of the occurrences it
// observes (their times included), so tests need no clock.
type eventCorrelator struct {
	series *lru.Cache // object, reason and message -> *eventSeries
	limits *lru.Cache // objectKey -> *objectLimit
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
	var l *objectLimit
	if v, ok := c.limits.Get(object); ok {
		l = v.(*objectLimit)
	} else {
		l = &objectLimit{limiter: rate.NewLimiter(rate.Every(eventRefill), eventBurst)}
		c.limits.Add(object, l)
	}
	return s, l.allow(ev.at)
}

func objectKey(r ObjectRef) string {
	return strings.Join([]string{r.APIVersion, r.Kind, r.Namespace, r.Name, string(r.UID)}, "\x00")
}

// objectLimit limits one object's Events: eventBurst at once, then one per
// eventRefill.
type objectLimit struct {
	limiter *rate.Limiter
	// last is the latest occurrence time seen. Occurrences may arrive
	// slightly out of order; they are taken as happening at last, since a
	// rate.Limiter given an earlier time would move its clock back and
	// later refill too much.
	last time.Time
}

func (l *objectLimit) allow(at time.Time) bool {
	if at.Before(l.last) {
		at = l.last
	}
	l.last = at
	return l.limiter.AllowN(at, 1)
}
