// Package procfs reads what Linux's /proc says about processes: their
// memory (/proc/<pid>/status), their parent, state and CPU time
// (/proc/<pid>/stat), and the tree they form. The bench and the soak
// harnesses measure the operator and its hook processes with it.
package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Memory is a process's resident memory, in bytes, from /proc/<pid>/status.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS int64
	// Peak is the largest RSS so far (VmHWM, the high-water mark).
	Peak int64
	// Anon and File split RSS into anonymous memory (a Go program's heap,
	// stacks and runtime) and pages of mapped files (the binary itself):
	// RssAnon and RssFile.
	Anon, File int64
}

// ReadMemory reads the memory of process pid.
func ReadMemory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return ParseStatus(data)
}

// ParseStatus reads VmRSS, VmHWM, RssAnon and RssFile from the content of
// /proc/<pid>/status. A status without VmRSS or VmHWM (a kernel thread, a
// zombie) is an error.
func ParseStatus(data []byte) (Memory, error) {
	var m Memory
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
			return Memory{}, fmt.Errorf("/proc status: %s: unexpected value %q", key, value)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc status: %s: %w", key, err)
		}
		*dst = kb << 10
		rss, hwm = rss || key == "VmRSS", hwm || key == "VmHWM"
	}
	if !rss || !hwm {
		return Memory{}, fmt.Errorf("/proc status: no VmRSS or VmHWM (a kernel thread, or a zombie?)")
	}
	return m, nil
}

// ClockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// which is 100 on every Linux architecture Go supports).
const ClockTick = 10 * time.Millisecond

// Stat is what /proc/<pid>/stat says of a process that the harnesses use.
type Stat struct {
	PPid  int
	State byte // R, S, D, Z ...
	// Self is utime + stime; Children cutime + cstime, the CPU time of the
	// children the process has waited for.
	Self, Children time.Duration
}

// ParseStat reads the state (field 3), the parent pid (field 4) and the
// CPU times (fields 14 to 17) from the content of /proc/<pid>/stat.
func ParseStat(data []byte) (Stat, error) {
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself; the fields after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc stat: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 15 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the command name, want at least 15", len(fields))
	}
	var n [5]int64
	for j, field := range []int{4, 14, 15, 16, 17} {
		v, err := strconv.ParseInt(fields[field-3], 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("/proc stat: field %d %q: %w", field, fields[field-3], err)
		}
		n[j] = v
	}
	return Stat{PPid: int(n[0]), State: fields[0][0], Self: time.Duration(n[1]+n[2]) * ClockTick,
		Children: time.Duration(n[3]+n[4]) * ClockTick}, nil
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(data)
}

// ReadAll reads /proc/<pid>/stat of every process; processes that end
// while it reads are left out.
func ReadAll() (map[int]Stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	stats := map[int]Stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			stats[pid] = s
		}
	}
	return stats, nil
}

// Parents maps each process in stats to its parent.
func Parents(stats map[int]Stat) map[int]int {
	parents := make(map[int]int, len(stats))
	for pid, s := range stats {
		parents[pid] = s.PPid
	}
	return parents
}

// Descendants returns the pids below root in the tree that parents (pid
// to parent pid) describes, however deep, ascending.
func Descendants(root int, parents map[int]int) []int {
	children := map[int][]int{}
	for pid, parent := range parents {
		children[parent] = append(children[parent], pid)
	}
	seen := map[int]bool{root: true}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TreeCPU returns the CPU time of process pid and everything below it:
// its own, that of the children it has reaped (a one-shot hook run), and
// that of its live descendants with their reaped children (resident hooks,
// and what they start).
func TreeCPU(pid int, stats map[int]Stat) (time.Duration, error) {
	root, ok := stats[pid]
	if !ok {
		return 0, fmt.Errorf("process %d: not in /proc", pid)
	}
	total := root.Self + root.Children
	for _, d := range Descendants(pid, Parents(stats)) {
		total += stats[d].Self + stats[d].Children
	}
	return total, nil
}

// DescendantsRSS returns the summed RSS of the live descendants of pid,
// and how many there are (zombies have none and are not counted).
func DescendantsRSS(pid int) (rss int64, n int, err error) {
	stats, err := ReadAll()
	if err != nil {
		return 0, 0, err
	}
	for _, d := range Descendants(pid, Parents(stats)) {
		m, err := ReadMemory(d)
		if err != nil {
			continue // ended, or a zombie
		}
		rss += m.RSS
		n++
	}
	return rss, n, nil
}
