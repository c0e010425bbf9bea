package recorder

import (
	"fmt"
	"testing"
	"time"
)

func occurrence(ref ObjectRef, message string, at time.Time) queuedEvent {
	return queuedEvent{ref: ref, reason: hookFailed, message: message, at: at}
}

func TestEventCorrelatorRateLimit(t *testing.T) {
	c := newEventCorrelator()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	written := 0
	for i := range 30 {
		// Different messages: separate Events, limited together per object.
		if _, ok := c.observe(occurrence(cmRef, fmt.Sprintf("error %d", i), t0.Add(time.Duration(i)*time.Second))); ok {
			written++
		}
	}
	if written != eventBurst {
		t.Errorf("%d of 30 Events at once were written; want the burst, %d", written, eventBurst)
	}
	if _, ok := c.observe(occurrence(nsRef, "error", t0.Add(30*time.Second))); !ok {
		t.Error("another object's first Event was held back by the first object's limit")
	}
	// One more token per eventRefill (the 30 s above count towards it).
	if _, ok := c.observe(occurrence(cmRef, "later", t0.Add(eventRefill-time.Minute))); ok {
		t.Error("an Event was written before eventRefill passed")
	}
	if _, ok := c.observe(occurrence(cmRef, "later", t0.Add(eventRefill+time.Minute))); !ok {
		t.Error("no Event was written after eventRefill passed")
	}
	if _, ok := c.observe(occurrence(cmRef, "later", t0.Add(eventRefill+2*time.Minute))); ok {
		t.Error("two Events were written within one eventRefill")
	}
	// Occurrences slightly out of order do not refill or break the bucket.
	if _, ok := c.observe(occurrence(cmRef, "late", t0)); ok {
		t.Error("an out-of-order occurrence got a token")
	}
	// A long quiet spell refills the bucket to the burst, not beyond.
	t1 := t0.Add(24 * time.Hour)
	written = 0
	for i := range 30 {
		if _, ok := c.observe(occurrence(cmRef, "again", t1.Add(time.Duration(i)*time.Millisecond))); ok {
			written++
		}
	}
	if written != eventBurst {
		t.Errorf("after a quiet day %d Events were written at once; want %d", written, eventBurst)
	}
}

func TestEventCorrelatorFoldsRepeats(t *testing.T) {
	c := newEventCorrelator()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var first *eventSeries
	for i := range 40 {
		s, _ := c.observe(occurrence(cmRef, "boom", t0.Add(time.Duration(i)*time.Second)))
		if first == nil {
			first = s
		}
		if s != first {
			t.Fatalf("repeat %d started another series", i)
		}
	}
	// Repeats held back by the rate limit are counted too.
	if first.count != 40 || !first.first.Equal(t0) || !first.last.Equal(t0.Add(39*time.Second)) {
		t.Errorf("series count %d, first %v, last %v; want 40 from %v to %v", first.count, first.first, first.last, t0, t0.Add(39*time.Second))
	}
	for _, other := range []queuedEvent{
		occurrence(cmRef, "another message", t0),
		occurrence(nsRef, "boom", t0),
		{ref: cmRef, reason: "OtherReason", message: "boom", at: t0},
	} {
		if s, _ := c.observe(other); s == first || s.count != 1 {
			t.Errorf("%+v joined the series of another object, reason or message", other)
		}
	}
}
