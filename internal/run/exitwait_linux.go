package run

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns true once the process pid has exited (it is not
// reaped: os/exec's Wait does that, and then returns at once), or false as
// soon as waiting this way is not possible; the caller goes on to Wait
// either way.
//
// Wait alone blocks a thread in waitid for the whole run. The Go runtime's
// monitor then takes that thread's processor for another thread, and
// after each such take it polls every 20 µs for a millisecond and more.
// On the two-core machines of the benchmark that cost the operator more
// CPU than the rest of a run did: for a hook of 30 ms, 2.1 ms of the
// operator's CPU per run against 0.9 ms waiting as below. A pidfd (Linux
// 5.10 for PIDFD_NONBLOCK) becomes readable when its process exits, so
// the wait goes to the runtime's network poller, like a socket read, and
// holds no thread.
func awaitExit(pid int) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false // older kernel, or a sandbox without pidfds: Wait alone
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	// The exit is checked before each wait: Read clears any readiness the
	// poller saw before it was called, so a process that exited early
	// would otherwise be waited for in vain. An error ends the wait, and
	// Wait blocks instead.
	exited := false
	_ = rc.Read(func(fd uintptr) bool {
		ready := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(ready, 0)
		exited = err == nil && n > 0
		return err != nil || n > 0
	})
	return exited
}
