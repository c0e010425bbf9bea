package run

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// residentSupported: on Linux a resident hook keeps its process.
const residentSupported = true

// openStatm opens /proc/<pid>/statm, to be read after each run (ownRSS):
// one read instead of an open, a read and a close. The open file stays
// the process's: once it has ended, reads fail, whatever takes its pid.
func openStatm(pid int) *os.File {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return nil
	}
	return f
}

// ownRSS returns the resident memory, in bytes, of the process whose statm
// f is (openStatm); 0 when it cannot be read.
func ownRSS(f *os.File) int64 {
	if f == nil {
		return 0
	}
	var buf [128]byte
	n, err := f.ReadAt(buf[:], 0)
	if n == 0 || (err != nil && !errors.Is(err, io.EOF)) {
		return 0
	}
	return statmPages(buf[:n]) * int64(os.Getpagesize())
}

// descendantsRSS returns the resident memory, in bytes, of the processes
// the resident process pid, whose tag is tag, started (residentTree: in its
// process group or not, its orphans included), read from /proc; what it
// cannot read counts 0. It walks the tree from pid (a few files per thread
// and process) rather than scanning every process.
func descendantsRSS(pid int, tag string) int64 {
	pageSize := int64(os.Getpagesize())
	var total int64
	for _, p := range residentTree(pid, tag) {
		total += residentPages(p) * pageSize
	}
	return total
}

// residentPages reads the resident pages of pid from /proc/<pid>/statm.
func residentPages(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	return statmPages(b)
}

// statmPages returns the resident pages in the content of a statm file.
func statmPages(b []byte) int64 {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return n
}

// pipePending returns how many bytes wait in the pipe f reads from
// (FIONREAD, named TIOCINQ on Linux).
func pipePending(f *os.File) (int, bool) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ioErr error
	if err := sc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}

// soleOpener reports whether no other open file (of any process, for
// reading or writing, a shared mapping included) refers to the file that
// fd, open in this process, refers to: the kernel grants a write lease
// only then. The lease is let go at once; a file system without leases
// answers false.
func soleOpener(fd int) bool {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return false
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return true
}
