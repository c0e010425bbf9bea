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
	wantLines(t, served(t, m), "# TYPE p_queue_oldest_pending_seconds gauge", `p_queue_oldest_pending_seconds{queue="idle"} 0`, `p_queue_oldest_pending_seconds{queue="main"} 90`)
	ages["main"] = 100 * time.Second
	if text := served(t, m); !strings.Contains(text, `p_queue_oldest_pending_seconds{queue="main"} 100`+"\n") {
		t.Errorf("the age was not read again:\n%s", text)
	}
	var nilMetrics *Metrics
	nilMetrics.QueueOldestPending(func() map[string]time.Duration { return nil })
}
