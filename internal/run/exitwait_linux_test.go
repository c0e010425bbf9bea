package run

import (
	"os/exec"
	"testing"
	"time"
)

// awaitExitWithin runs awaitExit(pid) and fails the test unless it returns
// within limit; it returns how long it took.
func awaitExitWithin(t *testing.T, pid int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		awaitExit(pid)
		close(done)
	}()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("awaitExit(%d) still waiting after %s", pid, limit)
		return 0
	}
}

// TestAwaitExitWaitsForTheExit: awaitExit returns once the process has
// exited, not before, and leaves it for Wait to reap.
func TestAwaitExitWaitsForTheExit(t *testing.T) {
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	took := awaitExitWithin(t, cmd.Process.Pid, 10*time.Second)
	if took < 200*time.Millisecond {
		t.Errorf("awaitExit returned after %s, before the 0.3 s sleep ended", took)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after awaitExit: %v (the process must be left for Wait to reap)", err)
	}
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("process state %s, want exit 0", cmd.ProcessState)
	}
}

// TestAwaitExitOfAnExitedProcess: a process that exited before awaitExit
// began (the common case for a fast hook) ends the wait at once. An early
// version waited for a readiness the poller had already seen and forgot.
func TestAwaitExitOfAnExitedProcess(t *testing.T) {
	for range 20 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // a zombie by now, not reaped
		awaitExitWithin(t, cmd.Process.Pid, 10*time.Second)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
