package operator_test

import (
	"os"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/memlimit"
)

// gogc reads the garbage collector's target without changing it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// While the initial lists run and until the Synchronization run has ended,
// GOGC is memlimit.StartupGCPercent; then the setting before comes back.
// Not parallel: GOGC is the process's, and other tests' operators start too.
func TestIntegrationStartupLowersGOGCUntilSynchronized(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Setenv("GOGC", v) // put back after the test
		os.Unsetenv("GOGC")
	}
	before := gogc()
	if before == memlimit.StartupGCPercent {
		t.Fatalf("GOGC is %d before the start, the start-up's own value: the test cannot tell them apart", before)
	}
	e := newEnv(t)
	gate := newGate(t)
	e.bashHook("sync.sh", cmsConfig(""), gate.wait())
	e.start()
	e.eventually(20*time.Second, "the Synchronization run", func() bool {
		return slices.Contains(describe(e.contexts("sync.sh")), "cms:Synchronization")
	})
	if got := gogc(); got != memlimit.StartupGCPercent {
		t.Errorf("GOGC during the Synchronization run = %d, want %d", got, memlimit.StartupGCPercent)
	}
	gate.open(t)
	e.waitReady(20 * time.Second)
	e.eventually(10*time.Second, "GOGC back to its setting before the start", func() bool { return gogc() == before })
}
