package main_test

import (
	"os"
	"testing"
)

// TestMain keeps the operators these tests start off the fixed metrics
// and probe ports and debug socket: tests (and other test binaries) run
// operators side by side. A test that needs a listener passes its address.
//
// The tests run in parallel (t.Parallel; make test runs 4 at a time):
// each has a namespace of its own, and everything cluster-wide it makes
// (webhook configurations, CRDs, ClusterRoles, leases) is named after that
// namespace, as tests of other packages already run beside them. Serial,
// and so alone in this package: the attacks with a time bound on the
// answer (TestIntegrationHostileListeners, ...SeriesFlood,
// ...ProbesPastIdleConnections, ...MetricsSecureTokenFlood), the test of
// GOMAXPROCS following the machine's load, and the one that sets an
// environment variable (t.Setenv cannot run in parallel).
func TestMain(m *testing.M) {
	os.Setenv("HOOK_OPERATOR_LISTEN_ADDRESS", "127.0.0.1:0")
	os.Setenv("HOOK_OPERATOR_HEALTH_LISTEN_ADDRESS", "127.0.0.1:0")
	os.Setenv("HOOK_OPERATOR_DEBUG_SOCKET", "")
	os.Exit(m.Run())
}
