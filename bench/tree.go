package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The operator's process tree: resident hooks are long-lived children of
// the operator (or of a shell it started), not reaped after each run, so
// their CPU time is in no /proc figure of the operator's own; the harness
// finds them as the operator's descendants.

// procStat is what the harness reads from /proc/<pid>/stat.
type procStat struct {
	PPid int
	// Self is utime + stime; Children cutime + cstime, the CPU time of the
	// children the process has waited for.
	Self, Children time.Duration
}

// parseStat reads the parent pid (field 4) and the CPU times (fields 14
// to 17) from the content of /proc/<pid>/stat.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc stat: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 15 {
		return procStat{}, fmt.Errorf("/proc stat: %d fields after the command name, want at least 15", len(fields))
	}
	var n [5]int64
	for j, field := range []int{4, 14, 15, 16, 17} {
		v, err := strconv.ParseInt(fields[field-3], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("/proc stat: field %d %q: %w", field, fields[field-3], err)
		}
		n[j] = v
	}
	return procStat{PPid: int(n[0]), Self: time.Duration(n[1]+n[2]) * clockTick, Children: time.Duration(n[3]+n[4]) * clockTick}, nil
}

// readStats reads /proc/<pid>/stat of every process; processes that end
// while it reads are left out.
func readStats() (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended since the listing
		}
		if s, err := parseStat(data); err == nil {
			stats[pid] = s
		}
	}
	return stats, nil
}

// descendants returns the pids below root in the tree that parents (pid to
// parent pid) describes, ascending.
func descendants(root int, parents map[int]int) []int {
	children := map[int][]int{}
	for pid, parent := range parents {
		children[parent] = append(children[parent], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c != root && !slices.Contains(out, c) {
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// treeCPU returns the CPU time of process pid and everything below it:
// its own, that of the children it has reaped (one-shot hook runs), and
// that of its live descendants with their reaped children (resident
// hooks, and the jq each resident bash hook run starts).
func treeCPU(pid int, stats map[int]procStat) (time.Duration, error) {
	root, ok := stats[pid]
	if !ok {
		return 0, fmt.Errorf("process %d: not in /proc", pid)
	}
	total := root.Self + root.Children
	for _, d := range descendants(pid, parentsOf(stats)) {
		total += stats[d].Self + stats[d].Children
	}
	return total, nil
}

func parentsOf(stats map[int]procStat) map[int]int {
	parents := make(map[int]int, len(stats))
	for pid, s := range stats {
		parents[pid] = s.PPid
	}
	return parents
}

// descendantsRSS returns the summed RSS of the live descendants of pid,
// and how many there are.
func descendantsRSS(pid int) (rss int64, n int, err error) {
	stats, err := readStats()
	if err != nil {
		return 0, 0, err
	}
	for _, d := range descendants(pid, parentsOf(stats)) {
		m, err := readMemory(d)
		if err != nil {
			continue // ended, or a zombie
		}
		rss += m.RSS
		n++
	}
	return rss, n, nil
}

// CPUWithHooks returns the CPU time of the operator and its hooks so far:
// the operator's own, its reaped hook runs', and its live (resident) hook
// processes'.
func (o *operator) CPUWithHooks() (time.Duration, error) {
	stats, err := readStats()
	if err != nil {
		return 0, err
	}
	return treeCPU(o.Pid(), stats)
}

// HookRSS returns the RSS of the operator's live hook processes (the
// resident ones, between runs) and how many there are.
func (o *operator) HookRSS() (int64, int, error) { return descendantsRSS(o.Pid()) }
