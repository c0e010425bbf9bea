package start

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/run"
)

// adoptOrphans makes the operator the reaper of its hooks' orphans until
// ctx ends (run.Subreap), so that a run's end kills every process the run
// started, setsid ones included, and reaps them, also as PID 1 without an
// init. Where that is not possible, the operator goes on with less.
func adoptOrphans(ctx context.Context, log logrus.FieldLogger) {
	if err := run.Subreap(ctx, log); err != nil {
		log.WithError(err).Warn("a run's end kills only the hook's process group: what a hook starts in a session of its own (setsid) may outlive the run, and run dirs are not reused")
	}
}
