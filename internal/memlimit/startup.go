package memlimit

import (
	"os"
	"runtime/debug"
	"sync"
)

// StartupGCPercent is the garbage collector's target (GOGC) while bindings
// list their objects and their Synchronizations run. At the default of
// 100 the heap grows to twice what it holds before each collection, and
// while the initial lists fill the cache what it holds grows the whole
// time: the peak came to 1.7 to 3 times the memory the process settles at,
// and a container sized for the settled figure was OOM-killed at its first
// start (docs/decisions.md, "The start-up memory peak").
const StartupGCPercent = 25

// starting counts the starts under way (operators in one process, as in
// tests and replay, may start at once); the first sets GOGC, the last puts
// back the setting from before the first.
var starting struct {
	sync.Mutex
	n      int
	before int
}

// LowerGCWhileStarting sets GOGC to StartupGCPercent and returns the
// function that puts back the setting before it, to be called once the
// Synchronizations have run; calling it again does nothing. While several
// starts overlap, GOGC stays low until the last one ends. With a GOGC
// environment variable set, the user's choice stands: nothing changes.
func LowerGCWhileStarting() (restore func()) {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return func() {}
	}
	starting.Lock()
	if starting.n == 0 {
		starting.before = debug.SetGCPercent(StartupGCPercent)
	}
	starting.n++
	starting.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			starting.Lock()
			defer starting.Unlock()
			if starting.n--; starting.n == 0 {
				debug.SetGCPercent(starting.before)
			}
		})
	}
}
