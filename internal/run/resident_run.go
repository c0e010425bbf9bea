package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// runResident does req's run on a resident process of its hook: the request
// line on fd 3, the reply on fd 4. The run's contract (files, limits,
// meaning of success) is a one-shot run's; its files have new paths, in
// the process's dir (residentDir), so that what a process writes after its
// reply, by a path or through a file it keeps open, reaches no later run.
func (r *Runner) runResident(ctx context.Context, req Request, log logrus.FieldLogger, stdout, stderr *lineWriter) (Result, error) {
	h := req.Hook
	limits := r.Limits(req)
	deadline := req.Deadline
	if deadline == nil {
		deadline = &Deadline{}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline.arm(limits.Timeout, cancel)
	defer deadline.stop()

	var res Result
	var rp *resident
	var dir *runDir
	var err error
	exitCode, fault := 0, errNotServed
	// A process that exited after its last reply, before it read this
	// run's request, or wrote to fd 4 after it, does not serve the run: a
	// new one does, once.
	for try := 0; try < 2 && notServed(fault); try++ {
		if rp != nil {
			reason := "exited"
			if errors.Is(fault, errWrotePastReply) {
				reason = "protocol"
			}
			r.residents.replaced(h.Name, rp, false, limits.KillGrace)
			r.processes().ProcessRestarted(h.Name, reason)
			log.WithField("reason", reason).Info("resident hook process replaced")
		}
		if rp, err = r.takeResident(runCtx, h, log); err != nil {
			return Result{}, fmt.Errorf("hook %s: resident process: %w", h.Name, err)
		}
		id, token := newRunID(), newFilesToken()
		if dir, err = r.runFiles(rp, token, req.contextsWriter()); err != nil {
			r.returnResident(h.Name, rp, h.Config.Settings, log)
			return Result{}, fmt.Errorf("hook %s: %w", h.Name, err)
		}
		if req.Trace != nil {
			dir.spans = dir.path + string(filepath.Separator) + spansFile + "." + token
		}
		rp.out.set(stdout)
		rp.errOut.set(stderr)
		start := time.Now()
		exitCode, fault = rp.serve(runCtx, requestLine(id, dir, req.Trace), id)
		res.Duration = time.Since(start)
		rp.out.drain(limits.OutputGrace)
		rp.errOut.drain(limits.OutputGrace)
		rp.out.set(nil)
		rp.errOut.set(nil)
	}
	res.StderrTail = stderr.tail()
	if fault != nil {
		return res, r.residentFault(ctx, runCtx, h.Name, rp, fault, res.StderrTail, deadline, limits, log)
	}
	rp.runs++
	// Read before the process goes back: its next run renames the files,
	// and a process stopped now takes its dir with it.
	if exitCode == 0 {
		err = dir.readOutputs(&res, r.maxOutputBytes())
	}
	dir.readSpans(&res)
	rp.dir.done()
	r.returnResident(h.Name, rp, h.Config.Settings, log)
	if exitCode != 0 {
		return res, fmt.Errorf("hook %s: exit code %d%s", h.Name, exitCode, stderrSuffix(res.StderrTail))
	}
	if err != nil {
		return res, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	return res, nil
}

// runFiles gives a run of rp its files, named with token, in rp's dir:
// made at its first run, and made anew, once, when the last one cannot
// serve (the hook moved or replaced it); the old one is removed in the
// background.
func (r *Runner) runFiles(rp *resident, token string, contexts func(io.Writer) error) (*runDir, error) {
	var err error
	for range 2 {
		if rp.dir == nil {
			var parent string
			if parent, err = r.home.dir(r.TmpDir); err != nil {
				return nil, err
			}
			if rp.dir, err = newResidentDir(parent); err != nil {
				return nil, err
			}
		}
		var d *runDir
		if d, err = rp.dir.prepare(token, contexts); err == nil {
			return d, nil
		}
		r.residents.removeDir(rp.dir)
		rp.dir = nil
	}
	return nil, err
}

// residentFault replaces rp after a run that did not end with a reply, and
// returns the run's error.
func (r *Runner) residentFault(ctx, runCtx context.Context, name string, rp *resident, fault error, stderrTail string, deadline *Deadline, limits Limits, log logrus.FieldLogger) error {
	if runCtx.Err() != nil {
		r.residents.kill(rp, limits.KillGrace)
		if ctx.Err() != nil {
			return fmt.Errorf("hook %s: cancelled: %w", name, ctx.Err())
		}
		r.processes().ProcessRestarted(name, "timeout")
		log.WithField("reason", "timeout").Warn("resident hook process replaced")
		return fmt.Errorf("hook %s: timed out after %s: %w", name, deadline.Timeout(), context.DeadlineExceeded)
	}
	crashed := errors.Is(fault, errExited)
	r.residents.replaced(name, rp, crashed, limits.KillGrace)
	reason := "protocol"
	if crashed {
		reason = "crashed"
	}
	r.processes().ProcessRestarted(name, reason)
	log.WithFields(logrus.Fields{"reason": reason, "error": fault}).Warn("resident hook process replaced")
	return fmt.Errorf("hook %s: %w%s", name, fault, stderrSuffix(stderrTail))
}

func stderrSuffix(tail string) string {
	if tail == "" {
		return " (no stderr output)"
	}
	return "; stderr ends with:\n" + tail
}

// errExited is a fault of a process that exited, or closed fd 4, during a
// run.
var errExited = errors.New("the resident process exited during the run")

// errNotServed is what serve returns when the process, having served a
// run before, ended before it read this run's request: it exited after
// its last reply, which is no fault.
var errNotServed = errors.New("the resident process exited before it read the request")

// errWrotePastReply is what serve returns, before it sends the request,
// when the process wrote to fd 4 after its last reply: it serves no more
// runs. Checked as late as can be, so that what it wrote until then fails
// no run.
var errWrotePastReply = errors.New("the resident process wrote to fd 4 after its last reply")

// notServed reports whether fault means that the process did not serve
// the run, which a new one may then serve.
func notServed(fault error) bool {
	return errors.Is(fault, errNotServed) || errors.Is(fault, errWrotePastReply)
}

// serve sends one request and waits for its reply, the process's exit or
// ctx's end. A nil fault means a well-formed reply with exitCode.
func (rp *resident) serve(ctx context.Context, request []byte, id string) (exitCode int, fault error) {
	if rp.runs > 0 && rp.wrotePastReply() {
		return 0, errWrotePastReply
	}
	// Both pipes' waits end with ctx: a process that reads no requests
	// fills the request pipe, one that does not reply holds the read.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = rp.request.SetWriteDeadline(aLongTimeAgo)
		_ = rp.reply.SetReadDeadline(aLongTimeAgo)
		close(fired)
	})
	defer func() {
		if !stop() {
			// ctx ended as the reply came: the pipes are usable again for
			// the next run.
			<-fired
			_ = rp.request.SetWriteDeadline(time.Time{})
			_ = rp.reply.SetReadDeadline(time.Time{})
		}
	}()
	if _, err := rp.request.Write(request); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if rp.runs > 0 {
			return 0, fmt.Errorf("%w (writing it: %v)", errNotServed, err)
		}
		return 0, fmt.Errorf("%w (writing the request: %v)", errExited, err)
	}
	line, err := rp.replies.ReadSlice('\n')
	switch {
	case err == nil:
		exitCode, fault = parseReplyLine(string(line), id)
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case errors.Is(err, bufio.ErrBufferFull):
		fault = fmt.Errorf("protocol: reply is longer than %d bytes", maxReplyBytes)
	case len(line) > 0:
		exitCode, fault = parseReplyLine(string(line), id) // cut short: not a line
	default:
		// End of file, or exitReplyGrace passed after the process exited.
		if rp.requestUnread(request) {
			return 0, errNotServed
		}
		select {
		case <-rp.exited:
			return 0, fmt.Errorf("%w (%v)", errExited, rp.exitState())
		default:
			return 0, fmt.Errorf("%w (it closed fd 4)", errExited)
		}
	}
	// What is not the reply, from a process that has not read all of the
	// request yet (no reply can name it before), was written past its last
	// reply, after the check above.
	if n, ok := pipePending(rp.request); fault != nil && rp.runs > 0 && ok && n > 0 {
		return 0, errWrotePastReply
	}
	return exitCode, fault
}

// requestUnread reports whether request, sent to a process that served a
// run before, is still whole in the pipe: the process has not begun to
// read it.
func (rp *resident) requestUnread(request []byte) bool {
	n, ok := pipePending(rp.request)
	return rp.runs > 0 && ok && n >= len(request)
}

func parseReplyLine(line, id string) (int, error) {
	code, err := parseReply(line, id)
	if err != nil {
		return 0, fmt.Errorf("protocol: %w", err)
	}
	return code, nil
}

// exitState describes how the process ended; call it once exited closed.
func (rp *resident) exitState() string {
	if ps := rp.cmd.ProcessState; ps != nil {
		return ps.String()
	}
	return fmt.Sprint(rp.waitErr)
}

// memory returns the resident memory of rp's process tree after a run:
// the process's own, read now, and that of the processes it started (in
// its group or not, its orphans included: residentTree), read at most once
// per descendantsEvery.
func (rp *resident) memory(now time.Time) int64 {
	pid := rp.cmd.Process.Pid
	if now.Sub(rp.descendantsAt) >= descendantsEvery {
		rp.descendants, rp.descendantsAt = descendantsRSS(pid, rp.tag), now
	}
	return ownRSS(rp.statm) + rp.descendants
}

// returnResident puts rp back among h's idle processes, or, past its
// limits or recycled by RecycleResident while it ran, stops it.
func (r *Runner) returnResident(name string, rp *resident, s hook.Settings, log logrus.FieldLogger) {
	reason := ""
	switch {
	case s.ResidentMaxRuns > 0 && rp.runs >= s.ResidentMaxRuns:
		reason = "runs"
	case s.ResidentMaxMemory > 0 && rp.memory(time.Now()) > s.ResidentMaxMemory:
		reason = "memory"
	}
	p := &r.residents
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.crashes, name)
	if rp.gen != p.gens[name] {
		reason = p.recycle[name]
	}
	if rp.gen != p.gens[name] || reason != "" || p.closed {
		if reason != "" {
			r.processes().ProcessRecycled(name, reason)
			log.WithFields(logrus.Fields{"reason": reason, "runs": rp.runs}).Info("resident hook process recycled")
		}
		p.stopLocked(rp, r.killGrace(), true)
		return
	}
	if p.idle == nil {
		p.idle, p.keep = map[string][]*resident{}, map[string]int{}
	}
	rp.idleSince = time.Now()
	p.idle[name] = append(p.idle[name], rp)
	// Runs beside the queue's (admission requests at once) may start more
	// processes than parallelism; those above it stop once idle for
	// surplusIdle, so that requests that keep coming at once keep theirs.
	p.keep[name] = max(1, s.Parallelism)
	if len(p.idle[name]) > p.keep[name] {
		r.scheduleTrimLocked(name, p.idleFor())
	}
}

func (p *residents) idleFor() time.Duration {
	if p.surplusIdle > 0 {
		return p.surplusIdle
	}
	return surplusIdle
}

// scheduleTrimLocked trims name's idle processes after wait, unless a trim
// is scheduled already.
func (r *Runner) scheduleTrimLocked(name string, wait time.Duration) {
	p := &r.residents
	if p.trimming[name] {
		return
	}
	if p.trimming == nil {
		p.trimming = map[string]bool{}
	}
	p.trimming[name] = true
	time.AfterFunc(wait, func() { r.trimResidents(name) })
}

// trimResidents stops name's idle processes above its keep that have been idle for
// surplusIdle, the longest idle first (idle lists are taken from the end),
// and schedules the next trim while more than keep are idle.
func (r *Runner) trimResidents(name string) {
	p := &r.residents
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trimming[name] = false
	idle, keep, now := p.idle[name], p.keep[name], time.Now()
	for len(idle) > keep && now.Sub(idle[0].idleSince) >= p.idleFor() {
		p.stopLocked(idle[0], r.killGrace(), true)
		idle = idle[1:]
	}
	p.idle[name] = idle
	if len(idle) > keep {
		r.scheduleTrimLocked(name, idle[0].idleSince.Add(p.idleFor()).Sub(now))
	}
}

// replaced stops rp after a fault; a crash counts towards the backoff of
// the next start.
func (p *residents) replaced(name string, rp *resident, crashed bool, killGrace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if crashed {
		if p.crashes == nil {
			p.crashes = map[string]int{}
		}
		p.crashes[name]++
	}
	p.stopLocked(rp, killGrace, false)
}

// kill stops rp at once (a run past its timeout).
func (p *residents) kill(rp *resident, killGrace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked(rp, killGrace, false)
}

// stopLocked stops rp in the background: gracefully (fd 3 closed, SIGTERM
// after stopGrace, SIGKILL after killGrace more), or, after a timeout or
// fault, at once (SIGTERM to its group, SIGKILL after killGrace).
func (p *residents) stopLocked(rp *resident, killGrace time.Duration, graceful bool) {
	p.stops.Add(1)
	go func() {
		defer p.stops.Done()
		rp.stop(killGrace, graceful)
	}()
}

// stop ends rp (stopLocked says how), signalling its process group and
// every process it started (residentTree); what is left when it has exited
// is killed then (wait). Its pipes are closed last.
func (rp *resident) stop(killGrace time.Duration, graceful bool) {
	_ = rp.request.Close()
	pid := rp.cmd.Process.Pid
	firstWait := stopGrace
	if !graceful {
		firstWait = 0
	}
steps:
	for _, step := range []struct {
		wait time.Duration
		sig  syscall.Signal
	}{{firstWait, syscall.SIGTERM}, {killGrace, syscall.SIGKILL}} {
		t := time.NewTimer(step.wait)
		select {
		case <-rp.exited:
			t.Stop()
			break steps
		case <-t.C:
		}
		signalResident(pid, rp.tag, step.sig)
	}
	<-rp.exited
	_ = rp.reply.Close()
	rp.out.end(rp.outputGrace)
	rp.errOut.end(rp.outputGrace)
	if rp.statm != nil {
		_ = rp.statm.Close()
	}
	if rp.dir != nil {
		_ = rp.dir.remove()
	}
}

// removeDir removes d in the background; close waits for it.
func (p *residents) removeDir(d *residentDir) {
	p.stops.Add(1)
	go func() {
		defer p.stops.Done()
		_ = d.remove()
	}()
}

// closeResidents stops every idle process and waits for all stops, those
// of processes busy now included once their runs return them.
func (p *residents) close(killGrace time.Duration) {
	p.mu.Lock()
	p.closed = true
	for name, list := range p.idle {
		for _, rp := range list {
			p.stopLocked(rp, killGrace, true)
		}
		delete(p.idle, name)
	}
	p.mu.Unlock()
	p.stops.Wait()
}
