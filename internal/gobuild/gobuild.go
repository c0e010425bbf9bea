// Package gobuild builds this module's programs for tests as the image and
// the release build them: CGO_ENABLED=0 and -trimpath (the Makefile's build
// and cross, hack/release/files.sh). The tests then run the binary that
// ships, and `go vet`, `make cross`, `make image` and the tests share one
// set of compiled packages in Go's build cache: a build with other flags
// (cgo on, paths kept) compiles every dependency once more, minutes on a
// new 2-core machine (docs/development.md).
package gobuild

import (
	"os"
	"os/exec"
)

// Command returns `go build -trimpath args...`, run in dir ("": the working
// dir) with CGO_ENABLED=0 added to the environment.
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
