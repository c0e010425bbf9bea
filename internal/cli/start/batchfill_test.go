package start

import (
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/queue"
)

// --batch-fill takes auto (the default: 32 for one-shot hooks, 16 for
// resident ones) or a count from 0 for every hook, and says what to write
// otherwise; the queue set gets the two fills.
func TestBatchFillFlag(t *testing.T) {
	for in, want := range map[string]BatchFill{"auto": {Auto: true}, "8": {Fixed: 8}, "0": {}} {
		var b BatchFill
		if err := b.Set(in); err != nil || b != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", in, b, err, want)
		}
		var again BatchFill
		if err := again.Set(b.String()); err != nil || again != b {
			t.Errorf("Set(%q) reads back as %q, which sets %+v, %v", in, b.String(), again, err)
		}
	}
	for _, in := range []string{"-1", "many", "Auto", "8.5"} {
		var b BatchFill
		if err := b.Set(in); err == nil || !strings.Contains(err.Error(), "use auto (32 events for a one-shot hook, 16 for a resident one), or a count from 0") {
			t.Errorf("Set(%q) = %v; want an error saying what to write", in, err)
		}
	}
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
