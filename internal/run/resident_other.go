//go:build !linux

package run

import "os"

// residentSupported: elsewhere (macOS, where hook authors run test and
// replay) a resident hook runs one-shot, as under shell-operator.
const residentSupported = false

// pipePending cannot tell here; resident hooks do not run here.
func pipePending(*os.File) (int, bool) { return 0, false }

// ownRSS and descendantsRSS cannot tell here.
func openStatm(int) *os.File           { return nil }
func ownRSS(*os.File) int64            { return 0 }
func descendantsRSS(int, string) int64 { return 0 }

// soleOpener cannot tell here (no leases): files are never kept.
func soleOpener(int) bool { return false }
