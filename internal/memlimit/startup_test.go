package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the current GOGC setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// setGOGC gives the test the GOGC variable env ("" for unset) and the
// collector's percentage percent, as a process started with them would
// have; both come back when the test ends.
func setGOGC(t *testing.T, env string, percent int) {
	t.Helper()
	if env != "" {
		t.Setenv("GOGC", env)
	} else {
		if v, ok := os.LookupEnv("GOGC"); ok {
			t.Setenv("GOGC", v) // restored after the test
		}
		os.Unsetenv("GOGC")
	}
	before := debug.SetGCPercent(percent)
	t.Cleanup(func() { debug.SetGCPercent(before) })
}

func TestLowerGCWhileStartingLowersAndRestores(t *testing.T) {
	setGOGC(t, "", 150)
	restore := LowerGCWhileStarting()
	if got := gcPercent(); got != StartupGCPercent {
		t.Fatalf("GOGC while starting = %d, want %d", got, StartupGCPercent)
	}
	restore()
	if got := gcPercent(); got != 150 {
		t.Fatalf("GOGC after start = %d, want 150 as before", got)
	}
}

// Starts that overlap keep GOGC low until the last one ends, and then the
// setting from before the first comes back; a second restore does nothing.
func TestLowerGCWhileStartingOverlapping(t *testing.T) {
	setGOGC(t, "", 150)
	first := LowerGCWhileStarting()
	second := LowerGCWhileStarting()
	first()
	first()
	if got := gcPercent(); got != StartupGCPercent {
		t.Fatalf("GOGC with one start still under way = %d, want %d", got, StartupGCPercent)
	}
	second()
	if got := gcPercent(); got != 150 {
		t.Fatalf("GOGC after both starts = %d, want 150 as before the first", got)
	}
}

func TestLowerGCWhileStartingKeepsTheUsersGOGC(t *testing.T) {
	setGOGC(t, "200", 200)
	restore := LowerGCWhileStarting()
	if got := gcPercent(); got != 200 {
		t.Fatalf("GOGC while starting = %d, want the user's 200", got)
	}
	restore()
	if got := gcPercent(); got != 200 {
		t.Fatalf("GOGC after start = %d, want the user's 200", got)
	}
}

// The target after a collection: the lowest while a list's size is unknown
// or too little is stored to estimate from; then the live heap plus
// StartupHeadroom of the heap estimated at the end, which is far above
// StartupGCPercent early and comes down to it at the end.
func TestStartupGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name                      string
		live, base                uint64
		stored, expected, unknown int64
		want                      int
	}{
		{"a list of unknown size", 20 * mb, 10 * mb, 1000, 100000, 1, StartupGCPercent},
		{"no list", 20 * mb, 10 * mb, 0, 0, 0, StartupGCPercent},
		{"under 5% stored", 12 * mb, 10 * mb, 4000, 100000, 0, StartupGCPercent},
		// 10% stored, 10 MB grown: 100 MB more at the end, 110 MB; 25% of
		// it is 27.5 MB over 20 MB live.
		{"10% stored", 20 * mb, 10 * mb, 10000, 100000, 0, 137},
		// 50%: 10 + 2*50 = 110 MB at the end; 27.5 MB over 60 MB.
		{"half stored", 60 * mb, 10 * mb, 50000, 100000, 0, 45},
		{"all stored", 110 * mb, 10 * mb, 100000, 100000, 0, 25},
		// More stored than expected (objects created meanwhile): the
		// live heap is the estimate.
		{"more than expected", 120 * mb, 10 * mb, 110000, 100000, 0, 25},
		// Early, a large estimate is bounded.
		{"bounded early", 12 * mb, 2 * mb, 5000, 100000, 0, maxStartupGCPercent}, // 202 MB at the end: 505
	} {
		if got := startupGCPercent(c.live, c.base, c.stored, c.expected, c.unknown); got != c.want {
			t.Errorf("%s: startupGCPercent = %d, want %d", c.name, got, c.want)
		}
	}
}

// Lists' sizes: unknown until Expect or Done; Done replaces the expected
// count by what the list stored; calls after Done change nothing.
func TestListProgress(t *testing.T) {
	unknown, expected, stored := lists.unknown.Load(), lists.expected.Load(), lists.stored.Load()
	check := func(step string, du, de, ds int64) {
		t.Helper()
		if u, e, s := lists.unknown.Load()-unknown, lists.expected.Load()-expected, lists.stored.Load()-stored; u != du || e != de || s != ds {
			t.Errorf("%s: unknown, expected, stored grew by %d, %d, %d; want %d, %d, %d", step, u, e, s, du, de, ds)
		}
	}
	a, b := StartList(), StartList()
	check("two lists started", 2, 0, 0)
	a.Expect(10)
	a.Expect(99) // only the first counts
	check("a expects 10", 1, 10, 0)
	for range 3 {
		a.Stored()
		b.Stored()
	}
	check("3 stored each", 1, 10, 6)
	a.Done() // a held 3, not 10
	check("a done", 1, 3, 6)
	b.Done()
	check("b done, its size now known", 0, 6, 6)
	b.Stored()
	b.Expect(5)
	b.Done()
	check("after Done", 0, 6, 6)
	var none *List
	none.Expect(1)
	none.Stored()
	none.Done()
	check("a nil List", 0, 6, 6)
}

// A start of known size sets the target from the heap after collections:
// with the lists at 10%, a collection raises GOGC above StartupGCPercent;
// the restore puts the setting from before back, and later collections
// leave it.
func TestStartupTunesAfterCollections(t *testing.T) {
	setGOGC(t, "", 100)
	restore := LowerGCWhileStarting()
	l := StartList()
	l.Expect(1000)
	// Grow the heap by what the "stored" objects hold.
	held := make([][]byte, 0, 100)
	for range 100 {
		held = append(held, make([]byte, 64<<10))
		l.Stored()
	}
	// The finalizer runs after the collection, on its own goroutine: wait
	// for it (however loaded the machine) rather than for a time.
	raised := false
	for deadline := time.Now().Add(30 * time.Second); !raised && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		raised = gcPercent() > StartupGCPercent
	}
	runtime.KeepAlive(held)
	if !raised {
		t.Errorf("GOGC after collections with 10%% of the objects stored = %d, want above %d", gcPercent(), StartupGCPercent)
	}
	l.Done()
	restore()
	if got := gcPercent(); got != 100 {
		t.Fatalf("GOGC after the start = %d, want 100 as before", got)
	}
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after a collection after the start = %d, want 100: the tuner went on", got)
	}
}
