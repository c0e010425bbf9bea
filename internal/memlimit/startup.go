package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// StartupGCPercent is the garbage collector's target (GOGC) while bindings
// list their objects and their Synchronizations run. At the default of
// 100 the heap grows to twice what it holds before each collection, and
// while the initial lists fill the cache what it holds grows the whole
// time: the peak came to 1.7 to 3 times the memory the process settles at,
// and a container sized for the settled figure was OOM-killed at its first
// start (docs/design/process.md, "The start-up memory peak").
const StartupGCPercent = 25

// starting counts the starts under way (operators in one process, as in
// tests and replay, may start at once); the first sets GOGC, the last puts
// back the setting from before the first.
var starting struct {
	sync.Mutex
	n      int
	before int
	// generation counts the starts' periods, so that a tuner of an
	// earlier one stops.
	generation int
}

// LowerGCWhileStarting sets GOGC to StartupGCPercent, or after each
// collection to what the lists' progress allows (StartList), and returns
// the function that puts back the setting before it, to be called once the
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
		starting.generation++
		tune(tuning{generation: starting.generation, base: heapLive(), stored: lists.stored.Load(), expected: lists.expected.Load()})
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

// The start-up GC target follows the initial lists' progress when their
// sizes are known. GOGC 25 for the whole start marks the live heap once per
// quarter of it allocated: early in the lists, when the heap holds little,
// that is a collection every few thousand objects, and the marking cost the
// time to Synchronization 21% at 300,000 ConfigMaps. What bounds the peak
// is the headroom at the end, when the heap holds everything: so, with the
// expected number of objects known (List.Expect) and the number stored so
// far, the goal of each collection is the live heap plus StartupHeadroom of
// the heap the lists will end at, estimated from the heap per object stored
// so far. That is GOGC 25 at the end, as before, and far higher early,
// where it costs nothing in peak (docs/design/process.md, "The start-up memory
// peak").
const (
	// StartupHeadroom is the heap the collector lets grow above what is
	// live, as a fraction of the estimated heap at the end of the lists.
	StartupHeadroom = 0.25
	// maxStartupGCPercent bounds the target early in the lists, when the
	// estimate rests on few objects.
	maxStartupGCPercent = 400
	// minEstimateFraction is how much of the expected objects must be
	// stored before the heap at the end is estimated from them.
	minEstimateFraction = 0.05
)

// lists is the progress of the initial lists under way.
var lists struct {
	expected atomic.Int64 // objects the lists of known size will hold
	unknown  atomic.Int64 // lists whose size is not known (yet)
	stored   atomic.Int64 // objects the lists have stored so far
}

// A List is one initial list's part in the start-up GC target. Its
// methods are safe for concurrent use; a nil *List does nothing.
type List struct {
	mu       sync.Mutex
	expected int64 // -1 until Expect
	stored   int64
	done     bool
}

// StartList registers a list about to fill a watch cache, its size not
// known yet: until it is (Expect, or Done), the target stays at
// StartupGCPercent.
func StartList() *List {
	lists.unknown.Add(1)
	return &List{expected: -1}
}

// Expect gives the number of objects the list is expected to hold (a
// limit=1 list's remainingItemCount plus one). Only the first call counts.
func (l *List) Expect(n int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || l.expected >= 0 {
		return
	}
	l.expected = n
	lists.expected.Add(n)
	lists.unknown.Add(-1)
}

// Expected returns the number of objects the list is expected to hold, or
// -1 while that is not known.
func (l *List) Expected() int64 {
	if l == nil {
		return -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expected
}

// Stored counts one object the list has stored.
func (l *List) Stored() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.stored++
		lists.stored.Add(1)
	}
}

// Done ends the list: what it stored is now its size, known.
func (l *List) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.done = true
	if l.expected < 0 {
		lists.unknown.Add(-1)
		lists.expected.Add(l.stored)
	} else {
		lists.expected.Add(l.stored - l.expected)
	}
}

// startupGCPercent returns the target for a collection that found live
// bytes live, base of them live before the lists began, given the lists'
// progress: StartupGCPercent while any list's size is unknown or too little
// of them is stored to estimate from.
func startupGCPercent(live, base uint64, stored, expected, unknown int64) int {
	if unknown > 0 || expected <= 0 || live == 0 {
		return StartupGCPercent
	}
	frac := float64(stored) / float64(expected)
	if frac < minEstimateFraction {
		return StartupGCPercent
	}
	grown := float64(live) - float64(base)
	end := float64(live)
	if frac < 1 && grown > 0 {
		end = float64(base) + grown/frac
	}
	p := int(100 * StartupHeadroom * end / float64(live))
	return min(max(p, StartupGCPercent), maxStartupGCPercent)
}

// heapLive reads the heap the last collection found live.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// sentinel is what tune sets a finalizer on: it holds a pointer, so that
// it is never batched with other objects by the tiny allocator, whose
// objects' finalizers may not run.
type sentinel struct {
	_ *byte
	_ [16]byte
}

// tuning is where the lists stood when a start began: the progress of the
// lists that a reload adds is counted from there.
type tuning struct {
	generation       int
	base             uint64 // heap live at the start
	stored, expected int64
}

// tune sets the target after each collection while a start is under way,
// from a finalizer that the collection runs: the target for the next one
// is set as soon as this one has measured what is live.
func tune(t tuning) {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		starting.Lock()
		defer starting.Unlock()
		if starting.n == 0 || starting.generation != t.generation {
			return
		}
		debug.SetGCPercent(startupGCPercent(heapLive(), t.base,
			lists.stored.Load()-t.stored, lists.expected.Load()-t.expected, lists.unknown.Load()))
		tune(t)
	})
}
