package run

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// hourLongHook is a runner that kills 100ms after SIGTERM and a bash hook
// of body whose own timeout is an hour: only a Deadline ends it sooner.
func hourLongHook(t *testing.T, body string) (*Runner, *hook.Hook) {
	t.Helper()
	r, _ := testRunner(t)
	r.KillGrace = 100 * time.Millisecond
	h := bashHook(t, body)
	h.Config.Settings.Timeout = time.Hour
	return r, h
}

// A running run's deadline moves when Deadline.Reset is called, counted
// from the run's start: shorter ends the run as a timeout, and a deadline
// already past ends it at once.
func TestDeadlineResetWhileRunning(t *testing.T) {
	r, h := hourLongHook(t, "touch \"$(dirname \"$0\")/started\"\nsleep 60\n")
	d := &Deadline{}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), Request{Hook: h, Deadline: d})
		done <- err
	}()
	waitFile(t, h.Dir+"/started")
	if got := d.Timeout(); got != time.Hour {
		t.Errorf("the run started with timeout %v, want the hook's 1h", got)
	}
	d.Reset(time.Millisecond) // past already
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 1ms") {
			t.Errorf("run ended with %v, want a timeout after the new 1ms", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run went on after its deadline moved into the past")
	}
}

// Reset before the run starts sets the timeout it starts with.
func TestDeadlineResetBeforeTheRun(t *testing.T) {
	r, h := hourLongHook(t, "sleep 60\n")
	d := &Deadline{}
	d.Reset(200 * time.Millisecond)
	_, err := r.Run(context.Background(), Request{Hook: h, Deadline: d})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("run ended with %v, want a timeout after 200ms", err)
	}
	if got := r.Timeout(h); got != time.Hour {
		t.Errorf("Runner.Timeout = %v, want the hook's 1h", got)
	}
}
