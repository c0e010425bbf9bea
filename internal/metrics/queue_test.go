package metrics

import (
	"strings"
	"testing"
	"time"
)

// queue_oldest_pending_seconds is read from the queue set at each read of
// the metrics, one series per queue, under the metrics' prefix.
func TestQueueOldestPending(t *testing.T) {
	m := New("p_")
	ages := map[string]time.Duration{"main": 90 * time.Second, "idle": 0}
	m.QueueOldestPending(func() map[string]time.Duration { return ages })
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"# TYPE p_queue_oldest_pending_seconds gauge", `p_queue_oldest_pending_seconds{queue="idle"} 0`, `p_queue_oldest_pending_seconds{queue="main"} 90`} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	ages["main"] = 100 * time.Second
	b.Reset()
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `p_queue_oldest_pending_seconds{queue="main"} 100`+"\n") {
		t.Errorf("the age was not read again:\n%s", b.String())
	}
	var nilMetrics *Metrics
	nilMetrics.QueueOldestPending(func() map[string]time.Duration { return nil })
}
