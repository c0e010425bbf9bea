package start

import (
	"strings"
	"testing"
	"time"
)

// --batch-window takes auto or a duration from 0 to 1m, and says what to
// write otherwise; the queue set gets the window, or auto's longest.
func TestBatchWindowFlag(t *testing.T) {
	checkFlagValue(t, map[string]BatchWindow{
		"auto": {Auto: true}, "40ms": {Fixed: 40 * time.Millisecond}, "0": {}, "1m": {Fixed: time.Minute},
	}, []string{"-1s", "2m", "fast", "Auto"}, "use auto, or a duration from 0 (none) to 1m")
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

// checkFlagValue fails t unless each key of good sets a flag value V to
// its value, and sets it again as V's String writes it; and unless each of
// bad is refused with an error holding hint, which says what to write.
func checkFlagValue[V comparable, P interface {
	*V
	Set(string) error
	String() string
}](t *testing.T, good map[string]V, bad []string, hint string) {
	t.Helper()
	for in, want := range good {
		var v V
		if err := P(&v).Set(in); err != nil || v != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", in, v, err, want)
		}
		var again V
		if err := P(&again).Set(P(&v).String()); err != nil || again != v {
			t.Errorf("Set(%q) reads back as %q, which sets %+v, %v", in, P(&v).String(), again, err)
		}
	}
	for _, in := range bad {
		var v V
		if err := P(&v).Set(in); err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("Set(%q) = %v; want an error saying what to write", in, err)
		}
	}
}
