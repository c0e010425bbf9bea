package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// describeMachine collects what the numbers depend on: the CPU, the
// toolchain, the commit, and how busy the machine was.
func describeMachine(root string, impls []*implementation) Machine {
	m := Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		MemoryMB:   memTotalMB(),
		GoVersion:  runtime.Version(),
		Commit:     output(root, "git", "rev-parse", "--short", "HEAD"),
		Dirty:      output(root, "git", "status", "--porcelain", "--untracked-files=no") != "",
		Binary:     impls[0].version,
		LoadBefore: loadAverage(),
	}
	if len(impls) > 1 {
		m.Reference = impls[1].version
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// cpuModel returns the "model name" of /proc/cpuinfo.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotalMB() int {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.Atoi(f[0])
				return kb / 1024
			}
		}
	}
	return 0
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// firstLines joins the first n lines of s, each trimmed, with ", ".
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	return strings.Join(lines[:min(n, len(lines))], ", ")
}

// output runs a command in dir and returns its trimmed output, or "?".
func output(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// Operators names the operators measured, with their versions.
func (m Machine) Operators() string {
	if m.Reference == "" {
		return m.Binary
	}
	return m.Binary + "; reference " + m.Reference
}
