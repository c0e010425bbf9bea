package start

import (
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// A hook whose settings.parallelism is above --max-parallel-hooks is warned
// of, naming the hook, both numbers and what to raise; one at or below the
// cap is not.
func TestWarnParallelCap(t *testing.T) {
	log, entries := logtest.NewNullLogger()
	mk := func(name string, parallelism int) *hook.Hook {
		h := &hook.Hook{Name: name}
		h.Config.Settings.Parallelism = parallelism
		return h
	}
	warnParallelCap([]*hook.Hook{mk("one.sh", 0), mk("eight.sh", 8), mk("sixteen.sh", 16)}, 8, log)
	all := entries.AllEntries()
	if len(all) != 1 {
		t.Fatalf("%d warnings, want 1 (for sixteen.sh): %v", len(all), all)
	}
	e := all[0]
	if e.Data["hook"] != "sixteen.sh" || e.Data["parallelism"] != 16 || e.Data["maxParallelHooks"] != 8 {
		t.Errorf("fields: %v", e.Data)
	}
	for _, want := range []string{"settings.parallelism 16", "--max-parallel-hooks 8", "raise --max-parallel-hooks to 16"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
}
