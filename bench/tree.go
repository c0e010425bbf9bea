package main

import (
	"time"

	"github.com/hook-operator/hook-operator/internal/procfs"
)

// The operator's process tree: resident hooks are long-lived children of
// the operator (or of a shell it started), not reaped after each run, so
// their CPU time is in no /proc figure of the operator's own; the harness
// finds them as the operator's descendants (internal/procfs).

// Memory reads the operator's resident memory.
func (o *operator) Memory() (procfs.Memory, error) { return procfs.ReadMemory(o.Pid()) }

// CPU returns the CPU time (user + system) the operator has used itself,
// without its children: the hooks it ran are not counted.
func (o *operator) CPU() (time.Duration, error) {
	s, err := procfs.ReadStat(o.Pid())
	return s.Self, err
}

// CPUWithHooks returns the CPU time of the operator and its hooks so far:
// the operator's own, its reaped hook runs', and its live (resident) hook
// processes'.
func (o *operator) CPUWithHooks() (time.Duration, error) {
	stats, err := procfs.ReadAll()
	if err != nil {
		return 0, err
	}
	return procfs.TreeCPU(o.Pid(), stats)
}

// HookRSS returns the RSS of the operator's live hook processes (the
// resident ones, between runs) and how many there are.
func (o *operator) HookRSS() (int64, int, error) { return procfs.DescendantsRSS(o.Pid()) }
