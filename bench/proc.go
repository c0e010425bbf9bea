package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// memory is a process's resident memory, in bytes, from /proc/<pid>/status.
type memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS int64
	// Peak is the largest RSS so far (VmHWM, the high-water mark).
	Peak int64
	// Anon and File split RSS into anonymous memory (the Go heap, stacks)
	// and pages of mapped files (the binary itself): RssAnon and RssFile.
	Anon, File int64
}

// readMemory reads the memory of process pid.
func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	return parseStatus(data)
}

// parseStatus reads VmRSS, VmHWM, RssAnon and RssFile from the content of
// /proc/<pid>/status.
func parseStatus(data []byte) (memory, error) {
	var m memory
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.Peak, "RssAnon": &m.Anon, "RssFile": &m.File}
	var rss, hwm bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		dst := fields[key]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("/proc status: %s: unexpected value %q", key, value)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status: %s: %w", key, err)
		}
		*dst = kb << 10
		rss, hwm = rss || key == "VmRSS", hwm || key == "VmHWM"
	}
	if !rss || !hwm {
		return memory{}, fmt.Errorf("/proc status: no VmRSS or VmHWM (a kernel thread, or a zombie?)")
	}
	return m, nil
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// which is 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// readCPU returns the CPU time (user + system) process pid has used itself,
// without its children: the hooks it ran are not counted.
func readCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPU(data)
}

// parseCPU reads utime + stime (fields 14 and 15; not cutime and cstime,
// the children's) from the content of /proc/<pid>/stat.
func parseCPU(data []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself; the fields after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[14-3 : 15-3+1] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
