package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profiling is where a profiled run puts its pprof profiles; a nil
// *profiling profiles nothing. With --profile each scenario variant gets
// one extra run per hook, run 0, that is profiled and left out of the
// medians: profiling costs CPU time of its own.
type profiling struct {
	// stem starts the run's file names: <dir>/sync-keepFull=false-bash.
	stem string
}

// profile returns the profiling of a run, or nil when it is not profiled.
// Only ours is profiled.
func (b *bench) profile(scenario, variant string, s subject, rep int) *profiling {
	if rep != 0 || !s.impl.pprof {
		return nil
	}
	name := scenario
	if variant != "" {
		name += "-" + variant
	}
	return &profiling{stem: filepath.Join(b.profileDir, name+"-"+s.hook)}
}

// firstRepeat is 0 when runs are profiled (run 0 is the profiled one), else 1.
func (b *bench) firstRepeat() int {
	if b.profileDir != "" {
		return 0
	}
	return 1
}

// cpu takes a CPU profile of op for d in the background, to
// <stem>.cpu.pprof; the returned function waits for it. Failures are
// reported, not fatal: the run's measurements do not depend on them.
func (p *profiling) cpu(ctx context.Context, op *operator, d time.Duration) (wait func()) {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		query := fmt.Sprintf("profile?seconds=%d", int(d.Round(time.Second).Seconds()))
		if err := op.fetchProfile(ctx, query, p.stem+".cpu.pprof", d+30*time.Second); err != nil {
			logf("  CPU profile: %v", err)
		}
	}()
	return func() { <-done }
}

// heap writes op's heap profile (after a garbage collection) to
// <stem>.heap.pprof.
func (p *profiling) heap(ctx context.Context, op *operator) {
	if p == nil {
		return
	}
	if err := op.fetchProfile(ctx, "heap?gc=1", p.stem+".heap.pprof", 30*time.Second); err != nil {
		logf("  heap profile: %v", err)
	}
}

// fetchProfile GETs /debug/pprof/<query> from the operator's debug socket
// into file.
func (o *operator) fetchProfile(ctx context.Context, query, file string, timeout time.Duration) error {
	if o.socket == "" {
		return fmt.Errorf("the operator has no debug socket")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if _, err := os.Stat(o.socket); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("debug socket %s never appeared", o.socket)
		case <-time.After(5 * time.Millisecond):
		}
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", o.socket)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://operator/debug/pprof/"+query, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("GET /debug/pprof/%s: %s: %s", query, resp.Status, strings.TrimSpace(string(body)))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
