package start

import (
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// warnParallelCap warns of each hook whose settings.parallelism is above
// --max-parallel-hooks: the cap, not the setting, then bounds its runs at
// once.
func warnParallelCap(hooks []*hook.Hook, maxParallel int, log logrus.FieldLogger) {
	for _, h := range hooks {
		if n := h.Config.Settings.Parallelism; n > maxParallel {
			log.WithFields(logrus.Fields{"hook": h.Name, "parallelism": n, "maxParallelHooks": maxParallel}).Warn(
				fmt.Sprintf("settings.parallelism %d is above --max-parallel-hooks %d, which caps the parallel runs of all hooks together: at most %d of this hook's runs go at once; raise --max-parallel-hooks to %d or more to allow them all", n, maxParallel, maxParallel, n))
		}
	}
}
