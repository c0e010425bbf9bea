package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// How a run's leftovers are found on Linux.
//
// Every hook starts a process group of its own, so its descendants share
// its group id (the hook's pid) unless they start a group or a session of
// their own. With the operator a child subreaper (Subreap), or PID 1, a
// descendant whose parent exits becomes the operator's child instead of
// going to init, so that every live descendant of a run that has ended is
// in the tree of one of the operator's children. Of those children:
//
//   - the hooks of live runs are os/exec's to wait for, never ours;
//   - those in the group of the run that ends are its leftovers;
//   - those in the group of a live run belong to that run;
//   - those that carry the tag of a live resident process (envTag, which
//     what it starts inherits) are its: they end with it
//     (killResidentLeftovers);
//   - those in a session of their own (setsid) descend from some run that
//     had started when they did: when every live one-shot run started
//     after them, that run has ended and they are leftovers too; when not,
//     they may belong to a live run and are left until that run ends (and
//     the run that ends does not reuse its dir). Resident processes do not
//     count here: what they start stays in their tree while they live, or
//     carries their tag;
//   - those in the operator's own process group were started by the
//     operator itself (a kubeconfig's credential plugin), and are left to
//     whoever started them;
//   - the others, in the operator's session but another group, are either
//     started by the operator (a hook's --config run and what it started)
//     or a leftover that started a group of its own (setpgid, bash's set
//     -m): nothing tells which, so they are left, and the run that ends
//     does not reuse its dir. The sweep reaps their zombies once two sweeps
//     in a row saw them.
//
// Hooks do not start a session of their own, which would tell every
// descendant of a run by its session id, setpgid ones included: setsid
// makes the kernel create a scheduler autogroup, which made each start of
// a hook 1 to 5 ms slower on the 2-core test machines
// (docs/guarantees.md#what-a-run-leaves-behind).
//
// A leftover is stopped with its whole tree (SIGSTOP, so that it cannot
// fork while its tree is read), then killed, then reaped by its pid: the
// operator never waits for "any child", which would take exit statuses
// that os/exec's Wait is waiting for.

// Bounds of one cleanup.
const (
	// cleanupRounds bounds the kill-and-reap rounds: each round finds the
	// children that the last round's kills handed to the operator.
	cleanupRounds = 20
	// reapWithin is how long a cleanup waits for what it killed to exit.
	reapWithin = 2 * time.Second
	// sweepEvery is how often Subreap looks for leftovers that no run's
	// end could kill, and for zombies nobody reaps.
	sweepEvery = 5 * time.Second
	// clockTicks is USER_HZ, the unit of start times in /proc: 100 on
	// every Linux architecture Go supports.
	clockTicks = 100
)

var (
	// subreaping is set once this process adopts its descendants' orphans.
	subreaping atomic.Bool
	// liveHooks maps the pid of each running hook to a lower bound of its
	// start time, in clock ticks since boot (as /proc reports them), and
	// that of each resident process to its tag (envTag).
	liveHooks = struct {
		sync.Mutex
		m    map[int]uint64
		tags map[int]string
	}{m: map[int]uint64{}, tags: map[int]string{}}
	// cleanupMu makes cleanups and sweeps one at a time: two at once would
	// reap the same pids.
	cleanupMu sync.Mutex
	// startMu keeps a cleanup from reading the children while a hook is
	// started but not yet tracked: a hook that exited at once would look
	// like a leftover zombie, and its exit status is os/exec's.
	startMu sync.RWMutex
)

// Subreap makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// the orphans of the hooks' processes become its children rather than
// init's, so that a run's end finds and kills the descendants of the run,
// setsid ones included (not those that only started a process group of
// their own: see above), and reaps them. Until ctx ends it also sweeps,
// every few seconds, the leftovers that no run's end could yet tell from a
// live run's, and the zombies nobody reaps (as PID 1, every orphan of the
// container comes here). Call it once, at start.
func Subreap(ctx context.Context, log logrus.FieldLogger) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming the reaper of the hooks' orphans (prctl PR_SET_CHILD_SUBREAPER): %w", err)
	}
	subreaping.Store(true)
	go func() {
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		var zombies map[int]uint64
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var n int
			n, zombies = sweep(zombies)
			if n > 0 {
				log.WithField("processes", n).Info("killed or reaped processes that hooks left behind")
			}
		}
	}()
	return nil
}

// adopting reports whether the orphans of hook processes come to this
// process: it is a child subreaper, or PID 1.
func adopting() bool {
	return subreaping.Load() || os.Getpid() == 1
}

// runEpoch returns a lower bound of the start time of a process started
// after the call, in the unit and clock of /proc's start times.
func runEpoch() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano()) / uint64(time.Second/clockTicks)
}

// startHook starts cmd, a hook, and records it as a live run's: its pid is
// os/exec's to wait for, and what started after it may be its run's.
func startHook(cmd *exec.Cmd) error {
	startMu.RLock()
	defer startMu.RUnlock()
	epoch := runEpoch()
	if err := cmd.Start(); err != nil {
		return err
	}
	liveHooks.Lock()
	liveHooks.m[cmd.Process.Pid] = epoch
	liveHooks.Unlock()
	return nil
}

// startResidentHook starts cmd, a resident hook whose environment holds
// tag (envTag), and records it as a live run's that lasts: what it starts
// is its own, in whatever group or session, for as long as it lives.
func startResidentHook(cmd *exec.Cmd, tag string) error {
	if err := startHook(cmd); err != nil {
		return err
	}
	liveHooks.Lock()
	liveHooks.tags[cmd.Process.Pid] = tag
	liveHooks.Unlock()
	return nil
}

// untrackHook forgets pid once os/exec has reaped it.
func untrackHook(pid int) {
	liveHooks.Lock()
	delete(liveHooks.m, pid)
	delete(liveHooks.tags, pid)
	liveHooks.Unlock()
}

// isLiveHook reports whether pid is the hook of a live run, os/exec's to
// wait for.
func isLiveHook(pid int) bool {
	liveHooks.Lock()
	defer liveHooks.Unlock()
	_, ok := liveHooks.m[pid]
	return ok
}

// killLeftovers kills what the run whose hook is pid left running: its
// process group (which needs no /proc), and,
// where this process adopts orphans, every descendant of the run it can
// tell, reaped. It reports whether nothing that may be the run's is left
// alive, and so whether its dir may serve a later run: never where orphans
// go elsewhere.
func killLeftovers(pid int) bool {
	_ = unix.Kill(-pid, unix.SIGKILL)
	if !adopting() {
		return false
	}
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	for range cleanupRounds {
		doomed, unsure, err := classify(pid)
		if err != nil {
			return false
		}
		if len(doomed) == 0 {
			return !unsure
		}
		if !killAndReap(doomed) {
			return false
		}
	}
	return false
}

// sweep kills and reaps the leftovers of ended runs that are left, and the
// zombies in this process's own session that were zombies at the last
// sweep too (prev): os/exec reaps its own at once, so nobody waits for
// those. It returns how many it killed
// or reaped, and this sweep's zombies for the next.
func sweep(prev map[int]uint64) (int, map[int]uint64) {
	if !adopting() {
		return 0, nil
	}
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	doomed, _, err := classify(0)
	if err != nil {
		return 0, nil
	}
	own, err := ownZombies()
	if err != nil {
		return 0, nil
	}
	zombies := map[int]uint64{}
	for _, z := range own {
		if start, ok := prev[z.pid]; ok && start == z.start {
			doomed = append(doomed, z)
		} else {
			zombies[z.pid] = z.start
		}
	}
	killAndReap(doomed)
	return len(doomed), zombies
}

// proc is what /proc/<pid>/stat says of a process.
type proc struct {
	pid, ppid, pgid, sid int
	state                byte
	start                uint64 // clock ticks since boot
}

// classify sorts the children of this process that os/exec does not wait
// for: doomed are the leftovers of the run whose hook is ended (0: none)
// and of runs that have ended; unsure is whether some others may be
// ended's. A resident process is a live run for as long as it lives, but
// its descendants never reach this process while it does unless their
// parent exited, and then they carry its tag: they are its, and every
// other leftover is judged by the one-shot runs alone.
func classify(ended int) (doomed []proc, unsure bool, err error) {
	startMu.Lock()
	defer startMu.Unlock()
	self := os.Getpid()
	ownSid, err := ownSession()
	if err != nil {
		return nil, false, err
	}
	ownPgid := unix.Getpgrp()
	kids, err := orphans()
	if err != nil {
		return nil, false, err
	}
	live, residentTags, oneShots, oldest := liveRuns(ended)
	for _, k := range kids {
		if _, ok := live[k]; ok || k == ended {
			continue // os/exec waits for it
		}
		p, err := readProc(k)
		if err != nil || p.ppid != self {
			continue // gone
		}
		_, liveGroup := live[p.pgid]
		switch {
		case liveGroup, p.pgid == ownPgid:
		case p.pgid == ended && ended != 0:
			doomed = append(doomed, p)
		case p.sid != ownSid && p.state == 'Z':
			doomed = append(doomed, p) // a dead leftover: nobody waits for it
		case len(residentTags) > 0 && p.state != 'Z' && residentTags[tagOf(k)]:
			// A live resident process's: it ends with it.
		case p.sid != ownSid && (oneShots == 0 || p.start < oldest):
			doomed = append(doomed, p)
		case p.state == 'Z':
			// Dead, so it reaches nothing; whoever started it, or the
			// sweep, reaps it.
		default:
			unsure = true
		}
	}
	return doomed, unsure, nil
}

// liveRuns returns the live hooks but ended, by pid, with their start
// epochs; the tags of the live resident processes; and how many of the
// live hooks are one-shot, with the earliest start epoch among those.
func liveRuns(ended int) (live map[int]uint64, residentTags map[string]bool, oneShots int, oldest uint64) {
	liveHooks.Lock()
	defer liveHooks.Unlock()
	live = make(map[int]uint64, len(liveHooks.m))
	residentTags = make(map[string]bool, len(liveHooks.tags))
	for p, epoch := range liveHooks.m {
		if p == ended {
			continue
		}
		live[p] = epoch
		if tag, ok := liveHooks.tags[p]; ok {
			residentTags[tag] = true
			continue
		}
		oneShots++
		if oldest == 0 || epoch < oldest {
			oldest = epoch
		}
	}
	return live, residentTags, oneShots, oldest
}

// ownZombies returns the zombie children of this process in its own
// session but for the hooks of live runs (os/exec reaps those, and the
// others it started, at once).
func ownZombies() ([]proc, error) {
	self := os.Getpid()
	ownSid, err := ownSession()
	if err != nil {
		return nil, err
	}
	kids, err := childrenOf(self)
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, k := range kids {
		liveHooks.Lock()
		_, hook := liveHooks.m[k]
		liveHooks.Unlock()
		if hook {
			continue
		}
		p, err := readProc(k)
		if err == nil && p.ppid == self && p.sid == ownSid && p.state == 'Z' {
			out = append(out, p)
		}
	}
	return out, nil
}

// killAndReap stops each of procs with its tree, kills them all, and reaps
// the procs (this process's children) by their pids; the rest of each tree
// becomes this process's children as its parent dies, for the next round.
// It reports whether every one of procs was reaped in time.
func killAndReap(procs []proc) bool {
	for _, p := range procs {
		if p.state == 'Z' {
			continue
		}
		for _, pid := range stopTree(p.pid) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	deadline := time.Now().Add(reapWithin)
	all := true
	for _, p := range procs {
		all = reap(p.pid, deadline) && all
	}
	return all
}

// stopTree stops pid and all its descendants, parents before children so
// that none forks once its children are read, and returns their pids.
func stopTree(pid int) []int {
	return tree([]int{pid}, func(p int) { _ = unix.Kill(p, unix.SIGSTOP) })
}

// tree returns roots and all their descendants, each once, parents before
// children; visit, when not nil, sees each before its children are read.
func tree(roots []int, visit func(int)) []int {
	seen := map[int]bool{}
	queue := roots
	var out []int
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		if visit != nil {
			visit(p)
		}
		kids, _ := childrenOf(p)
		queue = append(queue, kids...)
	}
	return out
}

// reap waits for the child pid to exit, polling until deadline, and
// reports whether it was reaped (or is no child of ours any more).
func reap(pid int, deadline time.Time) bool {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil, got == pid:
			return true // ECHILD: reaped already
		case time.Now().After(deadline):
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// ownSession returns the id of this process's session.
var ownSession = sync.OnceValues(func() (int, error) { return unix.Getsid(0) })

// orphans returns the children of this process that an orphan goes to,
// which are all of them that may be leftovers of a run: the kernel hands
// an orphan to the first live thread of its reaper, the main thread, which
// never exits in a Go program. One read, where all of the threads'
// children would be one a thread (a run's end reads it).
func orphans() ([]int, error) {
	self := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile("/proc/" + self + "/task/" + self + "/children")
	if errors.Is(err, fs.ErrNotExist) {
		return childrenByScan(os.Getpid()) // the kernel has no children files
	}
	if err != nil {
		return nil, err
	}
	return pids(b), nil
}

// pids parses a list of pids separated by spaces.
func pids(b []byte) []int {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// childrenOf returns the children of pid, from each of its threads'
// /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN), or, where the
// kernel lacks those files, from every process's stat.
func childrenOf(pid int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, serr := os.Stat(dir + t.Name()); serr == nil {
				return childrenByScan(pid) // the kernel has no children files
			}
			continue // the thread exited
		case err != nil:
			return nil, err
		}
		out = append(out, pids(b)...)
	}
	return out, nil
}

// childrenByScan finds the children of pid by reading every process's
// parent from /proc.
func childrenByScan(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(n); err == nil && p.ppid == pid {
			out = append(out, n)
		}
	}
	return out, nil
}

// readProc parses /proc/<pid>/stat.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return proc{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want 20 or more", pid, len(f))
	}
	p := proc{pid: pid, state: f[0][0]}
	var errs [4]error
	p.ppid, errs[0] = strconv.Atoi(f[1])
	p.pgid, errs[1] = strconv.Atoi(f[2])
	p.sid, errs[2] = strconv.Atoi(f[3])
	p.start, errs[3] = strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return proc{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return p, nil
}

// maxEnvironBytes bounds what tagOf reads of a process's environment.
const maxEnvironBytes = 256 << 10

// tagOf returns the resident tag (envTag) in the environment pid started
// with, or "" when it has none or it cannot be read.
func tagOf(pid int) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxEnvironBytes))
	prefix := []byte(envTag + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}

// residentTree returns the processes the resident process pid, whose tag
// is tag, started and that are alive: its descendants, in whatever group or
// session, and the children of this process that carry its tag (those
// whose parent exited: an orphan comes to this process, Subreap), with
// theirs.
func residentTree(pid int, tag string) []int {
	return tree(append([]int{pid}, taggedOrphans(tag)...), nil)[1:]
}

// taggedOrphans returns the children of this process, but live hooks, that
// carry tag.
func taggedOrphans(tag string) []int {
	if tag == "" || !adopting() {
		return nil
	}
	kids, err := orphans()
	if err != nil {
		return nil
	}
	var out []int
	for _, k := range kids {
		if !isLiveHook(k) && tagOf(k) == tag {
			out = append(out, k)
		}
	}
	return out
}

// signalResident sends sig to the process group of the resident process
// pid, which has not been reaped, and to every process it started
// (residentTree).
func signalResident(pid int, tag string, sig unix.Signal) {
	_ = unix.Kill(-pid, sig)
	for _, p := range residentTree(pid, tag) {
		_ = unix.Kill(p, sig)
	}
}

// killResidentLeftovers kills what the resident process pid, whose tag is
// tag, left running when it exited: its process group, when zombie says
// that pid is not reaped yet (and so still names the group), and, where
// this process adopts orphans, each of its children (all that was the
// resident process's went to it) in that group or carrying the tag, with
// their trees, reaped.
func killResidentLeftovers(pid int, tag string, zombie bool) {
	if zombie {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	if !adopting() {
		return
	}
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	self := os.Getpid()
	for range cleanupRounds {
		kids, err := orphans()
		if err != nil {
			return
		}
		var doomed []proc
		for _, k := range kids {
			if k == pid || isLiveHook(k) {
				continue
			}
			p, err := readProc(k)
			if err != nil || p.ppid != self {
				continue
			}
			if zombie && p.pgid == pid || p.state != 'Z' && tagOf(k) == tag {
				doomed = append(doomed, p)
			}
		}
		if len(doomed) == 0 || !killAndReap(doomed) {
			return
		}
	}
}
