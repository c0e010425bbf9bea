// Package buildinfo holds what the binary knows about its own build: the
// release version and source commit (stamped by the Makefile through
// -ldflags) and the Go toolchain it was built with.
package buildinfo

import "runtime"

// Version and Commit are set at link time, e.g.
//
//	-X github.com/hook-operator/hook-operator/internal/buildinfo.Version=v0.1.0
//
// A plain `go build` leaves the defaults, which say so.
var (
	Version = "v0.0.0-dev"
	Commit  = "unknown"
)

// Info is the build description printed by `hook-operator version`.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the description of the running binary.
func Get() Info {
	return Info{
		Version:   Version,
		Commit:    Commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}
