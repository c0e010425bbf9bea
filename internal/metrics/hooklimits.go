package metrics

import "fmt"

// The default caps on the series hooks hold (start's
// --hook-metrics-max-series-per-hook and --hook-metrics-max-series).
const (
	DefaultMaxSeriesPerHook = 1000
	DefaultMaxSeries        = 10000
)

// MaxSeriesBytes bounds one series of a hook: its metric name, label
// names and label values together, and 8 bytes per histogram bucket. A
// larger one is dropped, so that the caps on the number of series bound
// memory too (10,000 series of at most 4 KiB each).
const MaxSeriesBytes = 4 << 10

// The reasons a hook's series is dropped (the reason label of
// hook_metrics_dropped_total).
const (
	DropPerHook  = "per_hook_limit"
	DropTotal    = "total_limit"
	DropTooLarge = "too_large"
)

// HookLimits bound the series hooks hold: a hook that writes a fresh label
// value on every run would otherwise grow the operator's memory and
// /metrics without end. A new series over a cap is dropped; the series
// already held keep being updated.
type HookLimits struct {
	// PerHook caps the series one hook holds; 0: no cap.
	PerHook int
	// Total caps the series of all hooks together; 0: no cap.
	Total int
	// Warn, when not nil, is told once per hook of its first dropped
	// series; later drops are only counted.
	Warn func(msg string)
}

// hookCounts tracks the series each hook holds, and what was dropped.
// HookMetrics.mu guards it.
type hookCounts struct {
	limits HookLimits
	total  int
	byHook map[string]int
	warned map[string]bool
	// dropped, when not nil, counts drops in the operator's own metric
	// droppedName.
	dropped     func(hook, reason string, n int)
	droppedName string
}

// SetLimits sets the caps on the hooks' series. The series already held
// stay, over a lowered cap too.
func (h *HookMetrics) SetLimits(l HookLimits) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts.limits = l
}

// admit says whether hook may add a series of size bytes, and if not why.
// h.mu is held.
func (c *hookCounts) admit(hook string, size int) string {
	switch {
	case size > MaxSeriesBytes:
		return DropTooLarge
	case c.limits.PerHook > 0 && c.byHook[hook] >= c.limits.PerHook:
		return DropPerHook
	case c.limits.Total > 0 && c.total >= c.limits.Total:
		return DropTotal
	}
	return ""
}

// added counts a series of hook added (n = 1) or removed (n = -1).
func (c *hookCounts) added(hook string, n int) {
	if c.byHook == nil {
		c.byHook = map[string]int{}
	}
	c.total += n
	c.byHook[hook] += n
	if c.byHook[hook] <= 0 {
		delete(c.byHook, hook)
	}
}

// drops are the series one run of a hook could not add, by reason, with
// the first one for the log.
type drops struct {
	n       map[string]int
	example string
	reason  string
}

func (d *drops) add(reason, name string) {
	if d.n == nil {
		d.n = map[string]int{}
		d.example, d.reason = name, reason
	}
	d.n[reason]++
}

// report counts the drops of a run of hook and says, the first time a
// hook drops a series, what to log; h.mu is held. The caller logs after
// unlocking.
func (c *hookCounts) report(hook string, d drops) string {
	if d.n == nil {
		return ""
	}
	for reason, n := range d.n {
		if c.dropped != nil {
			c.dropped(hook, reason, n)
		}
	}
	if c.warned == nil {
		c.warned = map[string]bool{}
	}
	if c.warned[hook] || c.limits.Warn == nil {
		return ""
	}
	c.warned[hook] = true
	why := ""
	switch d.reason {
	case DropPerHook:
		why = fmt.Sprintf("the hook holds %d series, the most --hook-metrics-max-series-per-hook allows", c.limits.PerHook)
	case DropTotal:
		why = fmt.Sprintf("the hooks hold %d series, the most --hook-metrics-max-series allows", c.limits.Total)
	case DropTooLarge:
		why = fmt.Sprintf("its name, labels and buckets take more than %d bytes", MaxSeriesBytes)
	}
	return fmt.Sprintf("hook %s: $METRICS_PATH: new series of %s dropped: %s; a label whose value changes on every run "+
		"(an ID, a timestamp) makes a new series each time: use a group to replace them, or fewer label values. "+
		"Further drops of this hook are counted in %s, not logged", hook, d.example, why, c.droppedName)
}

// warnOnce logs msg, when there is one, without a lock held.
func warnOnce(warn func(string), msg string) {
	if msg != "" && warn != nil {
		warn(msg)
	}
}
