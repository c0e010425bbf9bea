// Package memlimit sets the Go runtime's memory limit from the container's,
// so that the garbage collector works harder as the operator nears the
// container's limit instead of letting the heap grow until the kernel's
// OOM killer ends the process. It also lowers the garbage collector's
// target while the initial lists fill the watch cache
// (LowerGCWhileStarting), which keeps the start-up peak near the memory the
// process settles at.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
)

// Fraction is the share of the container's memory limit given to the Go
// runtime. The rest is for what the runtime does not count (the binary,
// thread stacks, cgo) and, above all, for the hooks: they run in the same
// container and their memory counts against the same limit.
const Fraction = 0.75

// HooksShare is what a container limit of container bytes leaves for the
// hooks, beside Fraction for the Go runtime: the default bound of the
// memory of the webhooks' hooks (--webhook-hook-memory).
func HooksShare(container int64) int64 { return int64(float64(container) * (1 - Fraction)) }

// Choice is what Set decided.
type Choice struct {
	// Container is the container's memory limit in bytes; zero when there
	// is none or it could not be read.
	Container int64
	// Limit is the Go memory limit set; zero when Set left it alone.
	Limit int64
	// Reason says why, for the log.
	Reason string
}

// CgroupRoot is where Linux mounts the cgroup tree; in a container, the
// container's own cgroup.
const CgroupRoot = "/sys/fs/cgroup"

// Set sets the Go memory limit to Fraction of the memory limit found under
// cgroupRoot (normally CgroupRoot: cgroup v2's memory.max, else cgroup v1's
// memory/memory.limit_in_bytes; on other systems than Linux, none), unless the GOMEMLIMIT environment
// variable is set: then the user's choice stands. With no limit found it
// changes nothing.
func Set(cgroupRoot string) Choice {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return Choice{Reason: fmt.Sprintf("GOMEMLIMIT=%s is set, so the Go runtime uses it", v)}
	}
	c := Choose(cgroupRoot)
	if c.Limit > 0 {
		debug.SetMemoryLimit(c.Limit)
	}
	return c
}

// Choose returns what Set would do, without the GOMEMLIMIT check and
// without setting anything.
func Choose(cgroupRoot string) Choice {
	limit, err := containerLimit(cgroupRoot)
	switch {
	case err != nil:
		return Choice{Reason: fmt.Sprintf("the container's memory limit could not be read (%v); the Go runtime has no memory limit", err)}
	case limit == 0:
		return Choice{Reason: "the container has no memory limit; neither has the Go runtime"}
	}
	set := int64(float64(limit) * Fraction)
	return Choice{Container: limit, Limit: set,
		Reason: fmt.Sprintf("%.0f%% of the container's memory limit; the rest is for the hooks (set GOMEMLIMIT to choose another)", Fraction*100)}
}

// parseLimit reads "max" (v2: none), a number of bytes, or v1's "none"
// written as a number near the largest int64, rounded to the page size.
func parseLimit(name, s string) (int64, error) {
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s holds %q, not a number of bytes", name, s)
	}
	if n >= math.MaxInt64/2 { // cgroup v1's way of writing "no limit"
		return 0, nil
	}
	return int64(n), nil
}
