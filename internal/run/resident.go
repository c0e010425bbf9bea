package run

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// The protocol of resident hooks (docs/running.md, Resident hooks): the
// environment that tells a hook it is resident and where its pipes are.
const (
	envResident = "HOOK_OPERATOR_RESIDENT"
	envRequest  = "HOOK_OPERATOR_REQUEST_FD"
	envReply    = "HOOK_OPERATOR_REPLY_FD"
	// envTag marks a resident process and, inherited, what it starts: a
	// process in a session of its own whose parent exited is known by it
	// as the resident process's (residentTree).
	envTag = "HOOK_OPERATOR_RESIDENT_TAG"
	// stopGrace is how long a resident process has to exit after its
	// request pipe closes, before SIGTERM.
	stopGrace = 5 * time.Second
	// maxReplyBytes bounds one reply line; a reply is a few dozen bytes.
	maxReplyBytes = 4 << 10
	// exitReplyGrace is how long a run whose process exited waits for a
	// reply the process wrote before it exited (a process that holds fd 4
	// open and escaped the kill of the hook's leftovers would keep the pipe
	// from its end of file).
	exitReplyGrace = 100 * time.Millisecond
	// surplusIdle is how long a process above a hook's parallelism (one
	// started for admission or conversion requests that came at once)
	// stays idle before it is stopped.
	surplusIdle = 10 * time.Second
	// descendantsEvery is how often, at most, the memory of the processes
	// a resident hook started is read again (a walk of /proc that costs
	// more than a run); the hook's own is read after every run.
	descendantsEvery = time.Second
)

// Restart backoff after a resident process crashed during a run.
const (
	crashBackoffMin = 100 * time.Millisecond
	crashBackoffMax = 10 * time.Second
)

// resident is one resident hook process: it serves one run at a time.
type resident struct {
	cmd     *exec.Cmd
	exe     os.FileInfo // the executable when it started
	tag     string      // its envTag
	request *os.File    // the write end of the hook's fd 3
	// reply is the read end of the hook's fd 4, read only while a run is
	// in flight (readReply): bytes found there between runs were written
	// after a reply, and the process serves no more runs (stale).
	reply   *os.File
	replies *bufio.Reader
	exited  chan struct{}
	waitErr error // set before exited closes
	out     *outPipe
	errOut  *outPipe
	// outputGrace is how long its stdout and stderr are still read once it
	// and what it started have ended.
	outputGrace time.Duration
	runs        int
	gen         uint64 // the hook's generation when it started (RecycleResident)
	// descendants is the memory of the processes it started, read at
	// descendantsAt.
	descendants   int64
	descendantsAt time.Time
	idleSince     time.Time // when it last became idle
	statm         *os.File  // its /proc statm, read after each run (nil: unknown)
	// dir holds its runs' files (nil until its first run); removed when
	// it stops.
	dir *residentDir
}

// residents keeps the idle resident processes of every hook, by hook name,
// and the crash backoff of each.
type residents struct {
	mu      sync.Mutex
	idle    map[string][]*resident
	crashes map[string]int
	gens    map[string]uint64
	recycle map[string]string // by hook name: the reason to count for busy processes of an older generation
	warned  map[string]bool   // hooks told they run one-shot here
	closed  bool
	stops   sync.WaitGroup
	// keep is, by hook name, how many idle processes stay however long
	// they are idle (its parallelism); trimming says which hooks have a
	// trim of the others scheduled.
	keep        map[string]int
	trimming    map[string]bool
	surplusIdle time.Duration // zero: surplusIdle (tests shorten it)
}

// take returns an idle process of h whose executable is unchanged, or
// starts one, after the crash backoff.
func (r *Runner) takeResident(ctx context.Context, h *hook.Hook, log logrus.FieldLogger) (*resident, error) {
	p := &r.residents
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the operator is stopping")
	}
	for len(p.idle[h.Name]) > 0 {
		n := len(p.idle[h.Name])
		rp := p.idle[h.Name][n-1]
		p.idle[h.Name] = p.idle[h.Name][:n-1]
		if reason := rp.stale(h.Path); reason != "" {
			switch reason {
			case "changed":
				r.processes().ProcessRecycled(h.Name, reason)
			default:
				r.processes().ProcessRestarted(h.Name, reason)
			}
			log.WithField("reason", reason).Info("resident hook process replaced")
			p.stopLocked(rp, r.killGrace(), true)
			continue
		}
		p.mu.Unlock()
		return rp, nil
	}
	wait := backoff(p.crashes[h.Name])
	p.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return r.startResident(h, log)
}

// warnOneShot logs, once per hook, that a resident hook runs one-shot on
// this system.
func (p *residents) warnOneShot(name string, log logrus.FieldLogger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.warned[name] {
		return
	}
	if p.warned == nil {
		p.warned = map[string]bool{}
	}
	p.warned[name] = true
	log.Warn("settings.resident needs Linux; the hook runs one-shot here, each run a process")
}

// backoff is the wait before starting a process after crashes crashes in a
// row.
func backoff(crashes int) time.Duration {
	if crashes == 0 {
		return 0
	}
	d := crashBackoffMin << min(crashes-1, 10)
	return min(d, crashBackoffMax)
}

// stale says why rp must not serve another run, or "": it exited, or its
// executable changed. (One that wrote to fd 4 after its last reply is
// found as the request is about to go: serve.)
func (rp *resident) stale(path string) string {
	select {
	case <-rp.exited:
		return "exited"
	default:
	}
	if info, err := os.Stat(path); err != nil || !sameFile(rp.exe, info) {
		return "changed"
	}
	return ""
}

// wrotePastReply reports whether bytes wait on rp's fd 4 between runs:
// nothing it wrote after a reply may reach a later run.
func (rp *resident) wrotePastReply() bool {
	n, ok := pipePending(rp.reply)
	return rp.replies.Buffered() > 0 || ok && n > 0
}

// sameFile reports whether b is the file a was, unchanged: same inode,
// size, mode and modification time.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.Mode() == b.Mode() && a.ModTime().Equal(b.ModTime())
}

// startResident starts h as a resident process, once its path passes
// hook.CheckPath. A process already started keeps what was checked: a
// changed path makes it stale, and its replacement is checked.
func (r *Runner) startResident(h *hook.Hook, log logrus.FieldLogger) (*resident, error) {
	if err := h.CheckPath(); err != nil {
		return nil, err
	}
	exe, err := os.Stat(h.Path)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	stdin, err := hookStdin()
	if err != nil {
		return nil, err
	}
	reqRead, reqWrite, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start: request pipe: %w", err)
	}
	replyRead, replyWrite, err := os.Pipe()
	if err != nil {
		_, _ = reqRead.Close(), reqWrite.Close()
		return nil, fmt.Errorf("start: reply pipe: %w", err)
	}
	files := []*os.File{reqRead, reqWrite, replyRead, replyWrite}
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	// Between runs its lines carry the hook's name alone.
	idleLog := r.logger().WithField("hook", h.Name)
	out, outWrite, err := newOutPipe(idleLog.WithField("output", "stdout"), r.maxLineBytes())
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start: stdout pipe: %w", err)
	}
	files = append(files, out.r, outWrite)
	errOut, errWrite, err := newOutPipe(idleLog.WithField("output", "stderr"), r.maxLineBytes())
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("start: stderr pipe: %w", err)
	}
	files = append(files, errOut.r, errWrite)
	rp := &resident{exe: exe, tag: newTag(), request: reqWrite, reply: replyRead, replies: bufio.NewReaderSize(replyRead, maxReplyBytes),
		exited: make(chan struct{}), out: out, errOut: errOut, outputGrace: r.outputGrace()}
	cmd := exec.Command(h.Path)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = h.Dir, stdin, outWrite, errWrite
	cmd.Env = append(withoutResidentEnv(r.baseEnv()), envResident+"=1", envRequest+"=3", envReply+"=4", envTag+"="+rp.tag)
	cmd.ExtraFiles = []*os.File{reqRead, replyWrite}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	rp.cmd = cmd
	r.residents.mu.Lock()
	rp.gen = r.residents.gens[h.Name]
	r.residents.mu.Unlock()
	if err := startResidentHook(cmd, rp.tag); err != nil {
		closeAll()
		return nil, fmt.Errorf("start: %w", err)
	}
	// The child's ends: the hook (and what it starts) holds them now.
	_, _, _, _ = reqRead.Close(), replyWrite.Close(), outWrite.Close(), errWrite.Close()
	rp.statm = openStatm(cmd.Process.Pid)
	r.processes().ProcessStarted(h.Name)
	log.WithField("pid", cmd.Process.Pid).Info("resident hook process started")
	go out.copy()
	go errOut.copy()
	go rp.wait()
	return rp, nil
}

// wait waits for rp's process to exit. What it started ends with it: killed
// while it is a zombie not yet reaped, so that its pid still names its
// process group. A run in flight then has exitReplyGrace to read a reply
// the process wrote before it exited.
func (rp *resident) wait() {
	pid := rp.cmd.Process.Pid
	exited := awaitExit(pid)
	if exited {
		killResidentLeftovers(pid, rp.tag, true)
	}
	rp.waitErr = rp.cmd.Wait()
	untrackHook(pid)
	if !exited {
		killResidentLeftovers(pid, rp.tag, false)
	}
	close(rp.exited)
	time.AfterFunc(exitReplyGrace, func() { _ = rp.reply.SetReadDeadline(aLongTimeAgo) })
}

// aLongTimeAgo is a deadline that has passed: it ends a read or write
// blocked on a pipe.
var aLongTimeAgo = time.Unix(1, 0)

// random64 returns 64 random bits (crypto/rand, which never fails).
func random64() [8]byte {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return b
}

// newTag returns a new envTag value: 16 random hex digits.
func newTag() string {
	b := random64()
	return hex.EncodeToString(b[:])
}

// newRunID returns the id of a run's request: random digits, so that a
// reply written before the request (after an earlier run's reply) cannot
// answer it but by chance.
func newRunID() string {
	b := random64()
	return strconv.FormatUint(binary.LittleEndian.Uint64(b[:]), 10)
}

// newFilesToken returns the part of a resident run's file names that is
// new each run: random (newTag's form), and not its id, which a process
// that lists the dir during the run (one started by an earlier run,
// holding fd 4) could otherwise answer the request with.
func newFilesToken() string { return newTag() }

// withoutResidentEnv returns base without the protocol's variables, so that
// an operator started by a resident hook passes none on.
func withoutResidentEnv(base []string) []string {
	env := make([]string, 0, len(base)+3)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if name != envResident && name != envRequest && name != envReply {
			env = append(env, kv)
		}
	}
	return env
}

// reply is the hook's answer to one request.
type reply struct {
	ID       *string `json:"id"`
	ExitCode *int    `json:"exitCode"`
}

// parseReply checks that line answers the request id and returns its exit
// code.
func parseReply(line, id string) (int, error) {
	if !strings.HasSuffix(line, "\n") {
		return 0, fmt.Errorf("reply is longer than %d bytes or not a line", maxReplyBytes)
	}
	var rep reply
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return 0, fmt.Errorf("reply %s is not {\"id\":\"%s\",\"exitCode\":N}: %v", quoteReply(line), id, err)
	}
	switch {
	case rep.ID == nil || rep.ExitCode == nil:
		return 0, fmt.Errorf("reply %s lacks id or exitCode; write {\"id\":\"%s\",\"exitCode\":N}", quoteReply(line), id)
	case *rep.ID != id:
		return 0, fmt.Errorf("reply %s answers run %q, but run %q is in flight", quoteReply(line), *rep.ID, id)
	}
	return *rep.ExitCode, nil
}

func quoteReply(line string) string {
	line = strings.TrimSuffix(line, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return strconv.Quote(line)
}

// requestLine is the request of one run: its id and the contract's per-run
// variables, in the contract's order, without spaces.
func requestLine(id string, d *runDir, tr *Trace) []byte {
	var b strings.Builder
	b.WriteString(`{"id":"` + id + `","env":{`)
	for i, kv := range [][2]string{
		{envBindingContext, d.contexts}, {envKubernetesPatch, d.patch}, {envMetrics, d.metrics},
		{envValidatingResponse, d.validating}, {envAdmissionResponse, d.validating}, {envConversionResponse, d.conversion},
	} {
		if i > 0 {
			b.WriteByte(',')
		}
		v, _ := json.Marshal(kv[1])
		b.WriteString(`"` + kv[0] + `":` + string(v))
	}
	if tr != nil {
		for _, kv := range [][2]string{{envTraceParent, tr.Parent}, {envTraceState, tr.State}, {envTraceSpans, d.spans}} {
			if kv[1] != "" {
				v, _ := json.Marshal(kv[1])
				b.WriteString(`,"` + kv[0] + `":` + string(v))
			}
		}
	}
	b.WriteString("}}\n")
	return []byte(b.String())
}

// outPipe reads a resident process's stdout or stderr and passes it to the
// line writer of the run in flight or, between runs, to idle. It counts
// what it passed on, so that a run's end can wait for what the hook wrote
// before its reply (drain).
type outPipe struct {
	r        *os.File
	mu       sync.Mutex
	run      *lineWriter
	idle     *lineWriter
	consumed atomic.Int64
	done     chan struct{}
}

func newOutPipe(log *logrus.Entry, maxLine int) (*outPipe, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &outPipe{r: r, idle: newLineWriter(log, maxLine, 0), done: make(chan struct{})}, w, nil
}

func (o *outPipe) copy() {
	defer close(o.done)
	defer o.r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := o.r.Read(buf)
		if n > 0 {
			o.mu.Lock()
			w := o.idle
			if o.run != nil {
				w = o.run
			}
			_, _ = w.Write(buf[:n])
			o.mu.Unlock()
			o.consumed.Add(int64(n))
		}
		if err != nil {
			o.mu.Lock()
			o.idle.flush()
			o.mu.Unlock()
			return
		}
	}
}

// drain waits, at most for grace, until what is in the pipe now has been
// passed on: what the hook wrote before its reply belongs to the run.
func (o *outPipe) drain(grace time.Duration) {
	target, ok := o.target()
	if !ok {
		return
	}
	deadline := time.Now().Add(grace)
	for o.consumed.Load() < target && time.Now().Before(deadline) {
		select {
		case <-o.done:
			return
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// target is the count consumed will reach once the bytes now in the pipe
// are passed on.
func (o *outPipe) target() (int64, bool) {
	for range 100 {
		before := o.consumed.Load()
		pending, ok := pipePending(o.r)
		if !ok {
			return 0, false
		}
		if o.consumed.Load() == before {
			return before + int64(pending), true
		}
	}
	return 0, false
}

// end waits, at most for grace, until the writers of the pipe have all
// closed it, then closes it: a process that escaped the kill of the hook's
// leftovers and holds stdout or stderr keeps neither the fd nor copy.
func (o *outPipe) end(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
		_ = o.r.Close()
	}
}

// set makes lw (nil: idle) receive what follows; the line writer it
// replaces is flushed.
func (o *outPipe) set(lw *lineWriter) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.run != nil {
		o.run.flush()
	} else {
		o.idle.flush()
	}
	o.run = lw
}

// RecycleResident stops the resident processes of the hook named name, so
// that its next run starts a new one: the idle ones now, one busy with a
// run when the run ends. reason, when not empty, is counted as their
// recycle (a reload changed the hook); empty, they are only stopped (the
// hook is gone).
func (r *Runner) RecycleResident(name, reason string) {
	p := &r.residents
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gens == nil {
		p.gens, p.recycle = map[string]uint64{}, map[string]string{}
	}
	p.gens[name]++
	p.recycle[name] = reason
	for _, rp := range p.idle[name] {
		if reason != "" {
			r.processes().ProcessRecycled(name, reason)
		}
		p.stopLocked(rp, r.killGrace(), true)
	}
	delete(p.idle, name)
}
