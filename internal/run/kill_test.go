package run

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// withChild is a hook that starts a long child and waits for it; the
// child's pid is in child.pid once it runs.
const withChild = `
sleep 300 &
echo $! > child.pid.tmp && mv child.pid.tmp child.pid  # whole when seen
wait
`

// ignoringTERM is withChild ignoring SIGTERM. Ignored signals stay ignored
// across exec, so the child ignores SIGTERM too and only SIGKILL to the
// group ends it.
const ignoringTERM = `
trap '' TERM
sleep 300 &
echo $! > child.pid.tmp && mv child.pid.tmp child.pid  # whole when seen
while true; do wait || true; done
`

// cancelOnceChildStarted calls cancel once the hook h has written
// child.pid, and sends the time it did.
func cancelOnceChildStarted(h *hook.Hook, cancel context.CancelFunc) <-chan time.Time {
	cancelled := make(chan time.Time, 1)
	go func() {
		for !fileExists(filepath.Join(h.Dir, "child.pid")) {
			time.Sleep(10 * time.Millisecond)
		}
		cancelled <- time.Now()
		cancel()
	}()
	return cancelled
}

func TestRunTimeoutKillsHookAndChildren(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, withChild)
	start := time.Now()
	_, err := r.Run(context.Background(), Request{Hook: h, Timeout: 500 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 500ms") {
		t.Fatalf("error = %v, want a timeout naming 500ms", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("Run took %v after a 500ms timeout", took)
	}
	assertGone(t, readPid(t, h, "child.pid"))
	assertEmptyDir(t, r.TmpDir)
}

func TestRunTimeoutFromHookSettings(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, `sleep 300`)
	h.Config.Settings.Timeout = 300 * time.Millisecond
	_, err := r.Run(context.Background(), Request{Hook: h})
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("error = %v, want the hook's own timeout", err)
	}
}

func TestRunKillsWhatIgnoresSIGTERM(t *testing.T) {
	r, _ := testRunner(t)
	r.KillGrace = 300 * time.Millisecond
	h := bashHook(t, ignoringTERM)
	start := time.Now()
	_, err := r.Run(context.Background(), Request{Hook: h, Timeout: 200 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if took < 500*time.Millisecond || took > 4*time.Second {
		t.Errorf("Run took %v, want timeout + kill grace (500ms) and not much more", took)
	}
	assertGone(t, readPid(t, h, "child.pid"))
}

func TestRunCancelKillsHook(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, withChild)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelOnceChildStarted(h, cancel)
	_, err := r.Run(ctx, Request{Hook: h})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("error = %v, want cancelled", err)
	}
	assertGone(t, readPid(t, h, "child.pid"))
	assertEmptyDir(t, r.TmpDir)
}

func TestRunCancelKillsWhatIgnoresSIGTERM(t *testing.T) {
	r, _ := testRunner(t)
	r.KillGrace = 300 * time.Millisecond
	h := bashHook(t, ignoringTERM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := cancelOnceChildStarted(h, cancel)
	_, err := r.Run(ctx, Request{Hook: h})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("error = %v, want cancelled", err)
	}
	// Only SIGKILL, after the grace, can have ended the hook.
	if took := time.Since(<-cancelled); took < r.KillGrace {
		t.Errorf("Run returned %v after the cancel, before the kill grace of %v", took, r.KillGrace)
	}
	assertGone(t, readPid(t, h, "child.pid"))
	assertEmptyDir(t, r.TmpDir)
}

func TestRunDoesNotWaitForChildHoldingStdout(t *testing.T) {
	r, logs := testRunner(t)
	r.OutputGrace = time.Minute
	h := bashHook(t, `
echo before exit
sleep 30 &
echo $! > child.pid.tmp && mv child.pid.tmp child.pid  # whole when seen
echo '{"ok":true}' > "$KUBERNETES_PATCH_PATH"
`)
	start := time.Now()
	res, err := r.Run(context.Background(), Request{Hook: h})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > 5*time.Second {
		t.Errorf("Run took %v: it waited for the background child", took)
	}
	// Killed at the run's end, before it could hold up Wait.
	assertGone(t, readPid(t, h, "child.pid"))
	if string(res.Operations) != `{"ok":true}`+"\n" {
		t.Errorf("Operations = %q", res.Operations)
	}
	var sawLine bool
	for _, e := range outputEntries(logs) {
		sawLine = sawLine || e.Message == "before exit"
	}
	if !sawLine {
		t.Error("output written before the hook exited was not logged")
	}
	for _, e := range logs.AllEntries() {
		if strings.Contains(e.Message, "still holds stdout or stderr") {
			t.Error("the run waited for the output grace: the child held stdout until it ended")
		}
	}
}

// With Within, the graces are cut to fit and the hook has the rest: the
// three spans add up to Within, whatever the Runner's own graces.
func TestLimitsFitWithin(t *testing.T) {
	r := &Runner{}
	for _, within := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 9500 * time.Millisecond, 29500 * time.Millisecond, 10 * time.Minute} {
		l := r.Limits(Request{Hook: &hook.Hook{}, Within: within, Timeout: time.Hour})
		if sum := l.Timeout + l.KillGrace + l.OutputGrace; sum != within {
			t.Errorf("Within %s: %+v adds up to %s", within, l, sum)
		}
		if l.KillGrace > within/10 || l.KillGrace > DefaultKillGrace || l.OutputGrace > within/20 || l.OutputGrace > DefaultOutputGrace || l.Timeout <= within/2 {
			t.Errorf("Within %s: %+v", within, l)
		}
	}
	if l := r.Limits(Request{Hook: &hook.Hook{}, Within: 10 * time.Minute}); l.KillGrace != DefaultKillGrace || l.OutputGrace != DefaultOutputGrace {
		t.Errorf("a long Within cut the graces: %+v", l)
	}
	if l := r.Limits(Request{Hook: &hook.Hook{}, Timeout: time.Second}); l != (Limits{time.Second, DefaultKillGrace, DefaultOutputGrace}) {
		t.Errorf("without Within: %+v", l)
	}
}

// A hook that ignores SIGTERM, and its child, are killed within Within:
// with the Runner's own 5 s kill grace the run would last Within + 6 s.
func TestRunWithinEndsAHookThatIgnoresSIGTERM(t *testing.T) {
	r, _ := testRunner(t)
	h := bashHook(t, ignoringTERM)
	const within = 1500 * time.Millisecond
	start := time.Now()
	_, err := r.Run(context.Background(), Request{Hook: h, Within: within})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want a timeout", err)
	}
	// The full graces would make it Within + DefaultKillGrace + the output
	// grace; anything short of the kill grace's addition leaves a loaded
	// machine its slack.
	if took >= within+DefaultKillGrace {
		t.Errorf("Run took %v, want it to end within %v (not after the Runner's own kill grace, %v)", took, within, DefaultKillGrace)
	}
	assertGone(t, readPid(t, h, "child.pid"))
}
