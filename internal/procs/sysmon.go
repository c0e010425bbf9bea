package procs

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// The Go runtime's monitor thread (sysmon) sleeps until it is woken when
// every processor is idle. The first system call after such a sleep wakes
// it, and it then checks every 20 µs until the processors are idle again.
// An operator goes idle between any two watch events, so each event cost
// a wake-up and several of those short sleeps: on the benchmark's virtual
// machines a fifth to a quarter of the operator's CPU per event.
//
// With schedtrace set the monitor never sleeps that way: it checks every
// 10 ms while nothing happens (a cost of about 2 ms of CPU a second), and
// is not woken by system calls. The runtime reads GODEBUG only when the
// process starts, so SteadySysmon starts the operator again in its place
// with the setting added. schedtrace also prints a line of the
// scheduler's state to stderr at that interval, counted from the
// machine's boot: 2147483647 ms (24.8 days) is the largest interval.
const steadySysmon = "schedtrace=2147483647"

// SteadySysmon replaces the process by itself (same pid, arguments and
// environment) with GODEBUG's schedtrace set, unless GODEBUG already sets
// schedtrace. It returns only when there is nothing to do, or with the
// error that kept it from starting again.
func SteadySysmon() error {
	env, again := steadyEnv(os.Environ())
	if !again {
		return nil
	}
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("starting again with GODEBUG=%s: %w", steadySysmon, err)
	}
	return nil
}

// steadyEnv returns environ with steadySysmon added to GODEBUG, and
// whether that changed anything: not when GODEBUG sets schedtrace.
func steadyEnv(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	found := false
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if strings.HasPrefix(s, "schedtrace=") {
				return environ, false
			}
		}
		if v != "" {
			v += ","
		}
		out = append(out, "GODEBUG="+v+steadySysmon)
		found = true
	}
	if !found {
		out = append(out, "GODEBUG="+steadySysmon)
	}
	return out, true
}

// HookEnv returns environ without the setting SteadySysmon added, for the
// processes the operator starts: a hook written in Go would otherwise get
// it too, and print the scheduler's state.
func HookEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		var keep []string
		for _, s := range strings.Split(v, ",") {
			if s != steadySysmon && s != "" {
				keep = append(keep, s)
			}
		}
		if len(keep) > 0 {
			out = append(out, "GODEBUG="+strings.Join(keep, ","))
		}
	}
	return out
}
