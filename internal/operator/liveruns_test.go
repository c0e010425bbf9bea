package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/executor"
)

// A reload reaches the runs registered for a hook: retime moves their
// deadlines, cancel ends their contexts with errHookRemoved; other hooks'
// runs and ended runs are not touched.
func TestLiveRunsRetimeAndCancel(t *testing.T) {
	var l liveRuns
	ctxA, endA := l.begin(context.Background(), "a.sh")
	ctxB, endB := l.begin(context.Background(), "b.sh")
	defer endB()
	if n := l.retime("a.sh", time.Second); n != 1 || executor.RunDeadline(ctxA).Timeout() != time.Second {
		t.Errorf("retime reached %d runs, deadline %v; want a.sh's run at 1s", n, executor.RunDeadline(ctxA).Timeout())
	}
	if n := l.retime("a.sh", time.Second); n != 0 {
		t.Errorf("retime to the same timeout moved %d deadlines, want 0", n)
	}
	if executor.RunDeadline(ctxB).Timeout() != 0 {
		t.Errorf("b.sh's deadline moved to %v", executor.RunDeadline(ctxB).Timeout())
	}
	if n := l.cancel("a.sh"); n != 1 || !errors.Is(context.Cause(ctxA), errHookRemoved) {
		t.Errorf("cancel reached %d runs, cause %v; want a.sh's run cancelled as removed", n, context.Cause(ctxA))
	}
	if ctxB.Err() != nil {
		t.Error("b.sh's run was cancelled with a.sh's")
	}
	endA()
	if n := l.cancel("a.sh"); n != 0 {
		t.Errorf("an ended run was still reached (%d)", n)
	}
	if executor.RunDeadline(context.Background()) != nil {
		t.Error("a context outside a queued run has a deadline")
	}
}
