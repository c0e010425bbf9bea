package testoperator

import (
	"testing"

	"github.com/hook-operator/hook-operator/internal/localcluster"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a listener the test names (localcluster.FreePort: out of the range
// that port 0 draws from, so that an operator binding port 0 meanwhile is
// never given it). It fails t when none is found.
func FreePort(t testing.TB) string {
	t.Helper()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
