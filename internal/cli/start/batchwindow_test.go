package start

import (
	"strings"
	"testing"
	"time"
)

// --batch-window takes auto or a duration from 0 to 1m, and says what to
// write otherwise; the queue set gets the window, or auto's longest.
func TestBatchWindowFlag(t *testing.T) {
	for in, want := range map[string]BatchWindow{
		"auto": {Auto: true}, "40ms": {Fixed: 40 * time.Millisecond}, "0": {}, "1m": {Fixed: time.Minute},
	} {
		var b BatchWindow
		if err := b.Set(in); err != nil || b != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", in, b, err, want)
		}
		var again BatchWindow
		if err := again.Set(b.String()); err != nil || again != b {
			t.Errorf("Set(%q) reads back as %q, which sets %+v, %v", in, b.String(), again, err)
		}
	}
	for _, in := range []string{"-1s", "2m", "fast", "Auto"} {
		var b BatchWindow
		if err := b.Set(in); err == nil || !strings.Contains(err.Error(), "use auto, or a duration from 0 (none) to 1m") {
			t.Errorf("Set(%q) = %v; want an error saying what to write", in, err)
		}
	}
	if w := (BatchWindow{Auto: true}).window(); w != MaxBatchWindow {
		t.Errorf("auto's longest window %s, want %s", w, MaxBatchWindow)
	}
	if w := (BatchWindow{Fixed: 5 * time.Millisecond}).window(); w != 5*time.Millisecond {
		t.Errorf("a fixed window of 5ms gives the queues %s", w)
	}
	f := &Flags{}
	Settings(f)
	if f.BatchWindow != (BatchWindow{Fixed: 40 * time.Millisecond}) {
		t.Errorf("default --batch-window %+v, want a fixed 40ms", f.BatchWindow)
	}
}
