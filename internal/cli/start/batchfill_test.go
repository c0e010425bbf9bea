package start

import (
	"testing"

	"github.com/hook-operator/hook-operator/internal/queue"
)

// --batch-fill takes auto (the default: 32 for one-shot hooks, 16 for
// resident ones) or a count from 0 for every hook, and says what to write
// otherwise; the queue set gets the two fills.
func TestBatchFillFlag(t *testing.T) {
	checkFlagValue(t, map[string]BatchFill{"auto": {Auto: true}, "8": {Fixed: 8}, "0": {}},
		[]string{"-1", "many", "Auto", "8.5"}, "use auto (32 events for a one-shot hook, 16 for a resident one), or a count from 0")
	for _, c := range []struct {
		b                 BatchFill
		oneShot, resident int
	}{
		{BatchFill{Auto: true}, queue.DefaultBatchFill, queue.DefaultResidentBatchFill},
		{BatchFill{Fixed: 16}, 16, 0}, // 0: the queue gives resident hooks BatchFill too
		{BatchFill{}, 0, 0},
	} {
		if o, r := c.b.fills(); o != c.oneShot || r != c.resident {
			t.Errorf("%s gives the queues fills %d (one-shot) and %d (resident); want %d and %d", c.b.String(), o, r, c.oneShot, c.resident)
		}
	}
	f := &Flags{}
	Settings(f)
	if f.BatchFill != (BatchFill{Auto: true}) {
		t.Errorf("default --batch-fill %+v, want auto", f.BatchFill)
	}
}
