package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// faultLoop injects the scheduled faults in turn and, between them,
// measures convergence every checkpointEvery.
func (s *soak) faultLoop(ctx context.Context, faults []scheduled) {
	lastCheck := time.Now()
	for _, f := range faults {
		for s.since() < f.At {
			if time.Since(lastCheck) >= checkpointEvery && f.At-s.since() > convergeBound/3 {
				s.checkpoint(ctx, "")
				lastCheck = time.Now()
			}
			if !loop.Sleep(ctx, time.Second) {
				return
			}
		}
		rec := faultRecord{Kind: f.Kind, At: s.since()}
		s.mu.Lock()
		s.current = f.Kind
		s.mu.Unlock()
		logf("fault %s", f.Kind)
		target, err := s.inject(ctx, f.Kind)
		if ctx.Err() != nil {
			return
		}
		rec.Target, rec.Done = target, s.since()
		if err != nil {
			s.problem("fault %s: %v", f.Kind, err)
		}
		c := s.checkpoint(ctx, f.Kind)
		rec.Converge = c.Converge
		s.mu.Lock()
		s.faults, s.current = append(s.faults, rec), ""
		s.mu.Unlock()
		lastCheck = time.Now()
	}
	<-ctx.Done()
}

// checkpoint measures convergence and records it.
func (s *soak) checkpoint(ctx context.Context, after faultKind) checkpoint {
	c := s.measureConvergence(ctx, after)
	if ctx.Err() != nil {
		return c
	}
	if c.OK {
		logf("converged in %s", c.Converge.Round(100*time.Millisecond))
	} else {
		s.problem("after %q: %s", after, c.Detail)
	}
	s.mu.Lock()
	s.checkpoints = append(s.checkpoints, c)
	s.mu.Unlock()
	return c
}

// inject does one fault and its recovery, and returns what it hit.
func (s *soak) inject(ctx context.Context, kind faultKind) (string, error) {
	switch kind {
	case faultKill:
		// Never the witness (main.go): its process is the long run the
		// growth check needs.
		r := s.replicas[1+random(len(s.replicas)-1)]
		if err := r.signal(syscall.SIGKILL, 10*time.Second); err != nil {
			return r.id, err
		}
		return r.id, r.start()
	case faultTermLeader:
		r, err := s.leader(ctx)
		if err != nil {
			return "", err
		}
		if err := r.signal(syscall.SIGTERM, 30*time.Second); err != nil {
			return r.id, err
		}
		return r.id, r.start()
	case faultControlPlane:
		if err := s.kwok(ctx, "stop"); err != nil {
			return "", err
		}
		loop.Sleep(ctx, 10*time.Second)
		// Started again even when the run ends meanwhile.
		if err := s.kwok(context.WithoutCancel(ctx), "start"); err != nil {
			return "", err
		}
		for deadline := time.Now().Add(time.Minute); ctx.Err() == nil; {
			if _, err := s.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
				return "cluster soak (10 s down)", nil
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("/readyz not 200 within a minute of kwokctl start")
			}
			loop.Sleep(ctx, 200*time.Millisecond)
		}
		return "", ctx.Err()
	case faultHooksChange:
		// A valid hook, then the same made invalid (an unknown key), then
		// fixed; 10 s apart (the poll period is 2 s, inotify is at once).
		for _, config := range []string{extraValid, extraInvalid, extraValid} {
			if err := writeHook(s.hooksDir, "extra.sh", "#!/bin/sh\n[ \"$1\" = --config ] && echo '"+config+"'\nexit 0\n"); err != nil {
				return "", err
			}
			if !loop.Sleep(ctx, 10*time.Second) {
				return "", ctx.Err()
			}
		}
		return "hooks/extra.sh", nil
	case faultHang:
		r := s.busyReplica()
		path := filepath.Join(s.dir, "hang-"+r.id)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return r.id, err
		}
		// The next run of the hook on r takes the file and hangs; a source
		// change in every namespace makes one happen wherever r's share is.
		for i := range namespaces {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "hang-", Namespace: nsName(i), Labels: map[string]string{"soak": "src"}},
				Data: map[string]string{"v": "0"}}
			created, err := s.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
			if err == nil {
				s.churn.count(cm.Namespace+"/"+created.Name, "0", "create")
			}
		}
		for deadline := time.Now().Add(time.Minute); ; {
			if _, err := os.Stat(path); os.IsNotExist(err) {
				return r.id, nil
			}
			if time.Now().After(deadline) {
				return r.id, fmt.Errorf("no run of the hook on %s took the hang file within a minute", r.id)
			}
			loop.Sleep(ctx, 200*time.Millisecond)
		}
	case fault429:
		s.proxy.throttling.Store(true)
		before := s.proxy.answered.Load()
		loop.Sleep(ctx, 20*time.Second)
		s.proxy.throttling.Store(false)
		return fmt.Sprintf("%d requests answered 429 in 20 s", s.proxy.answered.Load()-before), nil
	}
	return "", fmt.Errorf("unknown fault %q", kind)
}

// busyReplica picks a random replica among those whose hook has handled
// objects (a replica may own no namespace), or any.
func (s *soak) busyReplica() *replica {
	var busy []*replica
	for _, r := range s.replicas {
		if st, err := os.Stat(filepath.Join(s.dir, "handled-"+r.id+".log")); err == nil && st.Size() > 0 {
			busy = append(busy, r)
		}
	}
	if len(busy) == 0 {
		return s.replicas[random(len(s.replicas))]
	}
	return busy[random(len(busy))]
}

const (
	extraValid   = `{"configVersion":"v1","schedule":[{"name":"tick","crontab":"*/30 * * * * *"}]}`
	extraInvalid = `{"configVersion":"v1","schedulle":[{"name":"tick","crontab":"*/30 * * * * *"}]}`
)

// writeHook replaces a hook file at once: written under a dot name (which
// the operator skips) and renamed.
func writeHook(dir, name, content string) error {
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, []byte(content), 0o700); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// webhookTally counts the webhook probes.
type webhookTally struct {
	Probes, Correct, Unavailable, Wrong int
	WrongExamples                       []string
}

// webhookLoop sends, every 5 s, a dry-run create the webhook must deny
// and one it must allow. A wrong answer inside a fault's window (from its
// start to its convergence) counts as unavailability; outside, as wrong.
func (s *soak) webhookLoop(ctx context.Context) {
	for loop.Sleep(ctx, 5*time.Second) {
		for _, deny := range []bool{true, false} {
			data := map[string]string{"ok": "1"}
			if deny {
				data["forbidden"] = "1"
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: nsName(random(namespaces))}, Data: data}
			at := s.since()
			_, err := s.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if ctx.Err() != nil {
				return
			}
			correct := (deny && err != nil && strings.Contains(err.Error(), "the data key forbidden is refused")) || (!deny && err == nil)
			s.mu.Lock()
			s.webhook.Probes++
			switch {
			case correct:
				s.webhook.Correct++
			case s.inFaultWindow(at, s.since()):
				s.webhook.Unavailable++
			default:
				s.webhook.Wrong++
				if len(s.webhook.WrongExamples) < 5 {
					s.webhook.WrongExamples = append(s.webhook.WrongExamples, fmt.Sprintf("%s: deny=%v: %v", at.Round(time.Second), deny, err))
				}
			}
			s.mu.Unlock()
		}
	}
}

// inFaultWindow reports whether [from, to] meets a fault's window, from
// its start to its convergence (or convergeBound after its end); the
// fault in progress counts. s.mu is held.
func (s *soak) inFaultWindow(from, to time.Duration) bool {
	if s.current != "" {
		return true
	}
	for _, f := range s.faults {
		end := f.Done + convergeBound
		if f.Converge >= 0 {
			end = f.Done + f.Converge
		}
		if from <= end+takeoverSlack && to >= f.At {
			return true
		}
	}
	return false
}

// takeoverSlack widens each fault window a little: a replica restarted by
// the fault joins the ring, and its members hand namespaces over, within
// seconds of the mirrors converging.
const takeoverSlack = 15 * time.Second

// sampleLoop samples every replica every sampleEvery.
func (s *soak) sampleLoop(ctx context.Context) {
	for loop.Sleep(ctx, sampleEvery) {
		for _, r := range s.replicas {
			pid := r.pid()
			if pid == 0 {
				continue
			}
			p, err := sampleProc(pid, r.tmpDir)
			if err != nil {
				continue // it just ended (a fault)
			}
			r.mu.Lock()
			started := r.started.Sub(s.start)
			r.mu.Unlock()
			smp := sample{At: s.since(), Replica: r.id, Pid: pid, Started: started, Proc: p}
			m, err := r.metrics(ctx, append([]string{"go_goroutines", `hook_operator_queue_length{queue="main"}`, "go_gc_heap_live_bytes"}, goMemMetrics...)...)
			if err != nil {
				smp.MetricsErr = true
			} else {
				smp.Goroutines, smp.Queue = m["go_goroutines"], m[`hook_operator_queue_length{queue="main"}`]
				smp.HeapLive, smp.Mem = m["go_gc_heap_live_bytes"], readGoMem(m)
			}
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
		}
	}
}

// keptRunDirs is how many run dirs the operator keeps for later runs
// (docs/operating.md, --tmp-dir); more in an idle replica's --tmp-dir are
// left over.
const keptRunDirs = 8

// idleCheck waits for the replicas to go idle after the end and records
// any hook process, zombie or temp file left.
func (s *soak) idleCheck(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, r := range s.replicas {
			pid := r.pid()
			if pid == 0 {
				left = append(left, r.id+" is not running")
				continue
			}
			p, err := sampleProc(pid, r.tmpDir)
			if err != nil {
				left = append(left, r.id+": "+err.Error())
				continue
			}
			// One operator's own dir: those of the processes killed
			// before it are removed at its first run.
			if p.Children > 0 || p.TmpDirs > keptRunDirs || p.TmpTop > 1 {
				left = append(left, fmt.Sprintf("%s: %d child process(es) (%d zombie); in its --tmp-dir %d operator dir(s) (want 1: its own) holding %d run dir(s) (at most %d are kept)",
					r.id, p.Children, p.Zombies, p.TmpTop, p.TmpDirs, keptRunDirs))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) || !loop.Sleep(ctx, time.Second) {
			s.problem("a minute after the end, idle replicas still hold: %s", strings.Join(left, "; "))
			return
		}
	}
}
