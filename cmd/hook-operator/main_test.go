package main_test

import (
	"os"
	"testing"
)

// TestMain keeps the operators these tests start off the fixed metrics
// and probe ports and debug socket: tests (and other test binaries) run
// operators side by side. A test that needs a listener passes its address.
func TestMain(m *testing.M) {
	os.Setenv("HOOK_OPERATOR_LISTEN_ADDRESS", "127.0.0.1:0")
	os.Setenv("HOOK_OPERATOR_HEALTH_LISTEN_ADDRESS", "127.0.0.1:0")
	os.Setenv("HOOK_OPERATOR_DEBUG_SOCKET", "")
	os.Exit(m.Run())
}
