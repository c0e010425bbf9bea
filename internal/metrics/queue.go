package metrics

import "time"

// QueueOldestPending serves queue_oldest_pending_seconds: for each queue,
// how long its oldest pending run has waited, read from oldest (the queue
// set's OldestPending) whenever the metrics are read, so that a queue held
// by a hung or failing run shows its age growing.
func (m *Metrics) QueueOldestPending(oldest func() map[string]time.Duration) {
	if m == nil {
		return
	}
	m.Register(oldestPending{name: m.Name("queue_oldest_pending_seconds"), oldest: oldest})
}

type oldestPending struct {
	name   string
	oldest func() map[string]time.Duration
}

func (c oldestPending) Names() []string { return []string{c.name} }

func (c oldestPending) Collect() []Family {
	f := Family{Name: c.name, Kind: Gauge, Labels: []string{"queue"},
		Help: "How long the oldest pending run of the queue has waited (a failed run waiting for its retry counts from when it was first queued); 0 when none waits."}
	for queue, d := range c.oldest() {
		f.Series = append(f.Series, Series{Values: []string{queue}, Value: d.Seconds()})
	}
	return []Family{f}
}
