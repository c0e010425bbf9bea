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

// folderWatcher reloads the hooks of dir into op each time the folder
// changes from the fingerprint since, until its context ends. A folder
// whose hooks are not all valid changes no configuration: the errors go to
// the log, to hooks_reload_total{result="invalid"} and to an Event on the
// operator's Pod, which say what runs meanwhile
// (operator.KeptAfterFailedReload).
//
// Each hook whose settings.parallelism is above maxParallel
// (--max-parallel-hooks) is warned of, as at start.
type folderWatcher struct {
	dir, since  string
	flags       ReloadFlags
	maxParallel int
	load        hook.LoadOptions
	op          *operator.Operator
	m           *metrics.Metrics
	log         logrus.FieldLogger
}

// Start implements manager.Runnable: it watches until ctx ends. The
// watcher is up as soon as it starts.
func (w *folderWatcher) Start(ctx context.Context) error {
	log := w.log.WithField("hooksDir", w.dir)
	hook.WatchDir(ctx, w.dir, w.since, hook.WatchOptions{Poll: w.flags.Poll, Folder: w.load.Folder, Warn: func(msg string) { log.Warn(msg) }}, func() {
		log.Info("the hooks folder changed; loading every hook's configuration")
		hooks, err := hook.Load(ctx, w.dir, w.load)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.m.HooksReload("invalid")
			log.WithError(err).Error("the hooks folder changed, and its hooks are not valid; no configuration was reloaded: " + operator.KeptAfterFailedReload + ". Fix the errors; the folder is reloaded at its next change")
			w.op.ReloadFailed(err)
			return
		}
		warnParallelCap(hooks, w.maxParallel, log)
		res, err := w.op.Reload(hooks)
		var invalid hook.ConfigErrors
		switch {
		case errors.Is(err, operator.ErrStopping):
			return
		case errors.As(err, &invalid): // a kind the cluster does not serve
			w.m.HooksReload("invalid")
			log.WithError(err).Error("the hooks folder changed, and its hooks are not valid on this cluster; no configuration was reloaded: " + operator.KeptAfterFailedReload + ". Fix the errors; the folder is reloaded at its next change")
			w.op.ReloadFailed(err)
		case err != nil:
			w.m.HooksReload("failed")
			log.WithError(err).Error("reloading the hooks failed")
			w.op.ReloadFailed(err)
		case res.Unchanged():
			w.m.HooksReload("unchanged")
			log.Info("no hook's configuration changed; changed scripts take effect at their next run")
		default:
			w.m.HooksReload("applied")
		}
	})
	return nil
}
