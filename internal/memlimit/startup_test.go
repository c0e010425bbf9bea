package memlimit

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the current GOGC setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestLowerGCWhileStartingLowersAndRestores(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Setenv("GOGC", v) // restored after the test
	}
	os.Unsetenv("GOGC")
	defer debug.SetGCPercent(debug.SetGCPercent(150))
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
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Setenv("GOGC", v)
	}
	os.Unsetenv("GOGC")
	defer debug.SetGCPercent(debug.SetGCPercent(150))
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
	t.Setenv("GOGC", "200")
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	restore := LowerGCWhileStarting()
	if got := gcPercent(); got != 200 {
		t.Fatalf("GOGC while starting = %d, want the user's 200", got)
	}
	restore()
	if got := gcPercent(); got != 200 {
		t.Fatalf("GOGC after start = %d, want the user's 200", got)
	}
}
