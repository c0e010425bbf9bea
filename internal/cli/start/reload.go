package start

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
)

// ReloadFlags configure the reload of the hooks folder when it changes.
type ReloadFlags struct {
	Enabled bool
	Poll    time.Duration
}

func (f ReloadFlags) check() error {
	if f.Enabled && f.Poll < time.Second {
		return errors.New("--hooks-reload-poll-period: use at least 1s (10s is the default)")
	}
	return nil
}

// watchHooks reloads the hooks of dir into op each time the folder changes
// from the fingerprint since, until ctx ends. A folder whose hooks are not
// all valid changes no configuration: the errors go to the log, to
// hooks_reload_total{result="invalid"} and to an Event on the operator's
// Pod, which say what runs meanwhile (operator.KeptAfterFailedReload).
//
// Each hook whose settings.parallelism is above maxParallel
// (--max-parallel-hooks) is warned of, as at start.
func watchHooks(ctx context.Context, dir, since string, f ReloadFlags, maxParallel int, load hook.LoadOptions, op *operator.Operator, m *metrics.Metrics, log logrus.FieldLogger) {
	log = log.WithField("hooksDir", dir)
	hook.WatchDir(ctx, dir, since, hook.WatchOptions{Poll: f.Poll, Folder: load.Folder, Warn: func(msg string) { log.Warn(msg) }}, func() {
		log.Info("the hooks folder changed; loading every hook's configuration")
		hooks, err := hook.Load(ctx, dir, load)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.HooksReload("invalid")
			log.WithError(err).Error("the hooks folder changed, and its hooks are not valid; no configuration was reloaded: " + operator.KeptAfterFailedReload + ". Fix the errors; the folder is reloaded at its next change")
			op.ReloadFailed(err)
			return
		}
		warnParallelCap(hooks, maxParallel, log)
		res, err := op.Reload(hooks)
		var invalid hook.ConfigErrors
		switch {
		case errors.Is(err, operator.ErrStopping):
			return
		case errors.As(err, &invalid): // a kind the cluster does not serve
			m.HooksReload("invalid")
			log.WithError(err).Error("the hooks folder changed, and its hooks are not valid on this cluster; no configuration was reloaded: " + operator.KeptAfterFailedReload + ". Fix the errors; the folder is reloaded at its next change")
			op.ReloadFailed(err)
		case err != nil:
			m.HooksReload("failed")
			log.WithError(err).Error("reloading the hooks failed")
			op.ReloadFailed(err)
		case res.Unchanged():
			m.HooksReload("unchanged")
			log.Info("no hook's configuration changed; changed scripts take effect at their next run")
		default:
			m.HooksReload("applied")
		}
	})
}
