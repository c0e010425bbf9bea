package start

import (
	"context"
	"io"
	"testing"
	"unsafe"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// start makes the operator a child subreaper, so that its hooks' orphans
// come to it (internal/run's tests show what it then does with them).
func TestAdoptOrphansMakesTheOperatorASubreaper(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	adoptOrphans(ctx, log)
	var on int32
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0); errno != 0 {
		t.Fatal(errno)
	}
	if on != 1 {
		t.Error("the operator does not adopt its hooks' orphans")
	}
}
