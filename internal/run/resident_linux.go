package run

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// residentSupported: on Linux a resident hook keeps its process.
const residentSupported = true

// groupRSS returns the resident memory, in bytes, of the processes in
// process group pgid, read from /proc; 0 when it cannot tell.
func groupRSS(pgid int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	pageSize := int64(os.Getpagesize())
	var total int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After "(comm)": state ppid pgrp ... rss is field 24 of stat.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 22 {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g != pgid && pid != pgid {
			continue
		}
		rss, _ := strconv.ParseInt(string(f[21]), 10, 64)
		total += rss * pageSize
	}
	return total
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
