package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// runResident does req's run on a resident process of its hook: the request
// line on fd 3, the reply on fd 4. The run's contract (dir, files, limits,
// meaning of success) is a one-shot run's.
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

	rp, err := r.takeResident(runCtx, h, log)
	if err != nil {
		return Result{}, fmt.Errorf("hook %s: resident process: %w", h.Name, err)
	}
	dir, err := rp.takeDir(&r.home, r.TmpDir, req.contextsWriter())
	if err != nil {
		r.returnResident(h.Name, rp, h.Config.Settings, log)
		return Result{}, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	rp.nextID++
	id := strconv.FormatUint(rp.nextID, 10)
	rp.out.set(stdout)
	rp.errOut.set(stderr)
	start := time.Now()
	exitCode, fault := rp.serve(runCtx, requestLine(id, dir), id)
	var res Result
	res.Duration = time.Since(start)
	rp.out.drain(limits.OutputGrace)
	rp.errOut.drain(limits.OutputGrace)
	rp.out.set(nil)
	rp.errOut.set(nil)
	res.StderrTail = stderr.tail()

	switch {
	case fault == nil:
		rp.runs++
		defer r.returnResident(h.Name, rp, h.Config.Settings, log)
		defer rp.releaseDir()
	case runCtx.Err() != nil:
		r.residents.kill(rp, limits.KillGrace)
		if ctx.Err() != nil {
			return res, fmt.Errorf("hook %s: cancelled: %w", h.Name, ctx.Err())
		}
		r.processes().ProcessRestarted(h.Name, "timeout")
		log.WithField("reason", "timeout").Warn("resident hook process replaced")
		return res, fmt.Errorf("hook %s: timed out after %s: %w", h.Name, deadline.Timeout(), context.DeadlineExceeded)
	default:
		crashed := errors.Is(fault, errExited)
		r.residents.replaced(h.Name, rp, crashed, limits.KillGrace)
		reason := "protocol"
		if crashed {
			reason = "crashed"
		}
		r.processes().ProcessRestarted(h.Name, reason)
		log.WithFields(logrus.Fields{"reason": reason, "error": fault}).Warn("resident hook process replaced")
		return res, fmt.Errorf("hook %s: %w%s", h.Name, fault, stderrSuffix(res.StderrTail))
	}
	if exitCode != 0 {
		return res, fmt.Errorf("hook %s: exit code %d%s", h.Name, exitCode, stderrSuffix(res.StderrTail))
	}
	if err := dir.readOutputs(&res, r.maxOutputBytes()); err != nil {
		return res, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	return res, nil
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

// serve sends one request and waits for its reply, the process's exit or
// ctx's end. A nil fault means a well-formed reply with exitCode.
func (rp *resident) serve(ctx context.Context, request []byte, id string) (exitCode int, fault error) {
	if _, err := rp.request.Write(request); err != nil {
		return 0, fmt.Errorf("%w (writing the request: %v)", errExited, err)
	}
	select {
	case line, ok := <-rp.replies:
		if !ok {
			<-rp.exited
			return 0, fmt.Errorf("%w (%v)", errExited, rp.exitState())
		}
		return parseReplyLine(line, id)
	case <-rp.exited:
		// A reply written just before the exit may not have been read
		// yet: it ends the run as any reply does.
		t := time.NewTimer(exitReplyGrace)
		defer t.Stop()
		select {
		case line, ok := <-rp.replies:
			if ok {
				return parseReplyLine(line, id)
			}
		case <-t.C:
		}
		return 0, fmt.Errorf("%w (%v)", errExited, rp.exitState())
	case <-ctx.Done():
		return 0, ctx.Err()
	}
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

// takeDir returns rp's run dir holding contexts: the one of its last run,
// emptied then but for the contexts file, written over now, or a new one.
func (rp *resident) takeDir(h *home, tmpDir string, contexts func(io.Writer) error) (*runDir, error) {
	if rp.dir != nil {
		if err := rp.dir.rewriteContexts(contexts); err == nil {
			return rp.dir, nil
		}
		_ = rp.dir.remove()
		rp.dir = nil
	}
	parent, err := h.dir(tmpDir)
	if err != nil {
		return nil, err
	}
	d, err := newRunDir(parent, contexts)
	if err != nil {
		return nil, err
	}
	rp.dir = d
	return d, nil
}

// releaseDir empties rp's run dir after a run, or, when the hook changed
// more than the files' content, removes it (the next run gets a new one).
func (rp *resident) releaseDir() {
	if rp.dir != nil && !rp.dir.reset(true) {
		_ = rp.dir.remove()
		rp.dir = nil
	}
}

// memory returns the resident memory of rp's process group after a run:
// the process's own, read now, and that of the processes it started, read
// at most once per descendantsEvery.
func (rp *resident) memory(now time.Time) int64 {
	pid := rp.cmd.Process.Pid
	if now.Sub(rp.descendantsAt) >= descendantsEvery {
		rp.descendants, rp.descendantsAt = descendantsRSS(pid), now
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

// stop ends rp (stopLocked says how) and whatever is left in its process
// group, then removes its run dir.
func (rp *resident) stop(killGrace time.Duration, graceful bool) {
	defer func() {
		if rp.dir != nil {
			_ = rp.dir.remove()
		}
		if rp.statm != nil {
			_ = rp.statm.Close()
		}
	}()
	_ = rp.request.Close()
	pgid := rp.cmd.Process.Pid
	firstWait := stopGrace
	if !graceful {
		firstWait = 0
	}
	for _, step := range []struct {
		wait time.Duration
		sig  syscall.Signal
	}{{firstWait, syscall.SIGTERM}, {killGrace, syscall.SIGKILL}} {
		t := time.NewTimer(step.wait)
		select {
		case <-rp.exited:
			t.Stop()
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-t.C:
		}
		_ = syscall.Kill(-pgid, step.sig)
	}
	<-rp.exited
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
