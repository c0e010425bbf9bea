package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hook-operator/hook-operator/internal/loop"
)

// The log lines of our leader election that the failover scenario times.
const (
	logLeading = "leader election: leading"
	logStandby = "leader election: standby"
)

// runFailover measures leader election (hook-operator only: shell-operator
// has none). Over FailoverObjects ConfigMaps, a leader and a standby run
// with the same hook; the harness stops the leader, with SIGTERM
// FailoverHandovers times and then with SIGKILL as often, and times each
// handover: from the signal to the standby taking the Lease, and to its
// hook's first run (the Synchronization of every object). A new standby
// is started after each handover, so that every one has the same shape.
// Before each, it reads the memory of the standby and of the leader; before
// the first, the API requests each makes per minute.
func runFailover(ctx context.Context, b *bench) error {
	ns, err := b.cluster.Namespace(ctx, "failover")
	if err != nil {
		return err
	}
	n := b.cfg.FailoverObjects
	if err := b.cluster.Fill(ctx, ns, "cm-", 0, n); err != nil {
		return err
	}
	for _, kind := range b.cfg.Hooks {
		if err := failoverChain(ctx, b, subject{b.impls[0], kind}, ns, n); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
	return nil
}

// failoverChain runs the handovers of one hook kind: each standby becomes
// the next handover's leader.
func failoverChain(ctx context.Context, b *bench, s subject, ns string, n int) error {
	lease := "bench-failover-" + s.hook
	replica := 0
	start := func() (*operator, error) {
		dir, err := newRunDir(b)
		if err != nil {
			return nil, err
		}
		replica++
		return startOperator(launch{impl: s.impl, kubeconfig: b.cluster.kubeconfig, hooksDir: b.hooksDirs[s.hook],
			dir: dir, config: hookConfig(ns, nil), tmpDir: b.cfg.HookTmpDir,
			watchLines: []string{logLeading, logStandby},
			extra: []string{"--leader-elect", "--operator-namespace", ns, "--leader-elect-lease-name", lease,
				"--leader-elect-identity", fmt.Sprintf("%s-%d", s.hook, replica)}})
	}
	leader, err := start()
	if err != nil {
		return err
	}
	defer func() { leader.Stop() }()
	if _, err := leader.WaitSync(ctx, time.Minute); err != nil {
		return fmt.Errorf("the first leader: %w", err)
	}
	var standby *operator
	defer func() {
		if standby != nil {
			standby.Stop()
		}
	}()
	signals := []syscall.Signal{}
	for range b.cfg.FailoverHandovers {
		signals = append(signals, syscall.SIGTERM)
	}
	for range b.cfg.FailoverHandovers {
		signals = append(signals, syscall.SIGKILL)
	}
	for i, sig := range signals {
		if standby, err = start(); err != nil {
			return err
		}
		r := newRun("failover", sigName(sig), s, i%b.cfg.FailoverHandovers+1, n)
		err := handover(ctx, b, leader, standby, sig, n, i == 0, &r)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.record(r, standby, err)
		leader.Stop()
		leader, standby = standby, nil
		if err != nil {
			return err // the chain's state is unknown; the next hook kind starts afresh
		}
	}
	return nil
}

// handover measures one: standby waits as a standby, settles, and the
// leader is sent sig.
func handover(ctx context.Context, b *bench, leader, standby *operator, sig syscall.Signal, n int, requests bool, r *Run) error {
	if _, err := standby.WaitLogged(ctx, time.Minute, logStandby); err != nil {
		return err
	}
	if !loop.Sleep(ctx, b.cfg.Settle) {
		return ctx.Err()
	}
	if requests {
		window := 6 * b.cfg.Settle
		l0, err1 := leader.Requests()
		s0, err2 := standby.Requests()
		if !loop.Sleep(ctx, window) {
			return ctx.Err()
		}
		l1, err3 := leader.Requests()
		s1, err4 := standby.Requests()
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				return err
			}
		}
		r.Metrics[mLeaderReqs] = (l1 - l0) / window.Minutes()
		r.Metrics[mStandbyReqs] = (s1 - s0) / window.Minutes()
	}
	sm, err := standby.Memory()
	if err != nil {
		return err
	}
	lm, err := leader.Memory()
	if err != nil {
		return err
	}
	r.Metrics[mStandbyRSS], r.Metrics[mLeaderRSS] = mb(sm.RSS), mb(lm.RSS)
	signalled := time.Now()
	if err := leader.cmd.Process.Signal(sig); err != nil {
		return err
	}
	sync, err := standby.WaitSync(ctx, time.Minute)
	if err != nil {
		return err
	}
	if sync.Objects != n+1 {
		return fmt.Errorf("the new leader's Synchronization had %d objects, want %d and kube-root-ca.crt", sync.Objects, n)
	}
	taken := standby.Logged(logLeading)
	r.Metrics[mFailover] = seconds(signalled, sync.At)
	r.Metrics[mLeaseTaken] = seconds(signalled, taken)
	r.Metrics[mTakeoverSync] = seconds(taken, sync.At)
	return nil
}

func sigName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// Requests returns the API requests the operator has made so far: the sum
// of hook_operator_kube_requests_total on its /metrics.
func (o *operator) Requests() (float64, error) {
	return o.metricSum("hook_operator_kube_requests_total{")
}

// metricSum returns the sum of the series on the operator's /metrics whose
// lines start with prefix.
func (o *operator) metricSum(prefix string) (float64, error) {
	o.mu.Lock()
	addr := o.metricsAddr
	o.mu.Unlock()
	if addr == "" {
		return 0, fmt.Errorf("the operator did not log its /metrics address")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// waitMetric waits until the series starting with prefix on the
// operator's /metrics add up to want.
func (o *operator) waitMetric(ctx context.Context, timeout time.Duration, prefix string, want float64) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := o.metricSum(prefix)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on /metrics: %v (%v), want %v, after %s; operator log:\n%s", prefix, got, err, want, timeout, o.Log(20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
