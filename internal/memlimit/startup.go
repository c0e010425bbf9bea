package memlimit

import (
	"os"
	"runtime/debug"
)

// StartupGCPercent is the garbage collector's target (GOGC) while bindings
// list their objects and their Synchronizations run. At the default of
// 100 the heap grows to twice what it holds before each collection, and
// while the initial lists fill the cache what it holds grows the whole
// time: the peak came to 1.7 to 3 times the memory the process settles at,
// and a container sized for the settled figure was OOM-killed at its first
// start (docs/decisions.md, "The start-up memory peak").
const StartupGCPercent = 25

// LowerGCWhileStarting sets GOGC to StartupGCPercent and returns the
// function that puts back the setting before it, to be called once the
// Synchronizations have run. With a GOGC environment variable set, the
// user's choice stands: nothing changes, and restore does nothing.
func LowerGCWhileStarting() (restore func()) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return func() {}
	}
	before := debug.SetGCPercent(StartupGCPercent)
	return func() { debug.SetGCPercent(before) }
}
