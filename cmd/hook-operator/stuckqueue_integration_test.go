package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// A hook that hangs holds its queue, and the queue can be freed (all
// through the binary, on the local cluster, with retries an hour apart so
// that only what the test does moves the queue on):
//   - queue_oldest_pending_seconds shows the age of the run waiting
//     behind the hung one;
//   - a reload that gives the hung hook a settings.timeout times its
//     running run out (its deadline is now its start plus the timeout);
//   - `debug retry` runs the failed run now instead of after its backoff;
//   - `debug drop` drops the failed run, and the queue moves on;
//   - a reload that removes a hook whose run hangs stops that run and
//     drops its pending runs, and the queue moves on.
func TestIntegrationStuckQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	mkcm := func(name, app string) { h.configMap(t, name, map[string]string{"app": app}, nil) }
	binding := func(app string) string {
		return strings.ReplaceAll(`"kubernetes":[`+cmBinding("cms", app)+`]`, "NS", h.ns)
	}
	// hang records the start of each run of an Event, then hangs (its
	// Synchronization succeeds, so that start-up completes, and is recorded
	// as sync); other records each context it gets.
	hang := func(settings string) string {
		return bashHook(`{"configVersion":"v1",`+binding("hang")+settings+`}`,
			`if jq -e '.[0].type == "Synchronization"' "$BINDING_CONTEXT_PATH" >/dev/null; then echo sync >>`+filepath.Join(records, "hang")+`; exit 0; fi
echo start >>`+filepath.Join(records, "hang")+"\nexec sleep 600\n")
	}
	other := bashHook(`{"configVersion":"v1",`+binding("other")+`}`,
		`jq -r '.[] | "\(.type) \(.watchEvent // "") \([.objects[]?.object.metadata.name, .object.metadata.name // empty] | join(","))"' "$BINDING_CONTEXT_PATH" >>`+filepath.Join(records, "other")+"\n")
	version := 0
	write := func(files map[string]string) {
		t.Helper()
		version++
		testoperator.ConfigMapVolume(t, h.hooks, fmt.Sprint(version), files)
	}
	count := func(name, prefix string) int { return lines(records, name, prefix) }
	write(map[string]string{"hang.sh": hang(""), "other.sh": other})
	o := h.start(t, "--retry-initial-delay", "1h", "--retry-max-delay", "1h")
	o.waitFor(t, "other.sh's Synchronization", func() bool { return count("other", "Synchronization") == 1 })
	// Both: an event that comes while hang.sh's Synchronization waits its
	// turn joins that run (contexts [Synchronization, Event]), which exits.
	o.waitFor(t, "hang.sh's Synchronization", func() bool { return count("hang", "sync") == 1 })

	// hang.sh's run for h1 hangs; other.sh's for o1 waits behind it.
	mkcm("h1", "hang")
	o.waitFor(t, "hang.sh's first run", func() bool { return count("hang", "start") == 1 })
	mkcm("o1", "other")
	o.waitFor(t, "the waiting run's age in queue_oldest_pending_seconds", func() bool {
		return o.metric(t, `hook_operator_queue_oldest_pending_seconds{queue="main"}`) >= 1
	})
	if count("other", "Event") != 0 {
		t.Fatal("other.sh ran while hang.sh held the queue")
	}

	// A timeout added by a reload reaches the hung run.
	write(map[string]string{"hang.sh": hang(`,"settings":{"timeout":"2s"}`), "other.sh": other})
	o.waitLog(t, "hook hang.sh: timed out after 2s")
	state := func() queue.QueueState {
		var qs []queue.QueueState
		must(t, json.Unmarshal([]byte(o.debug(t, "queues", "-o", "json")), &qs))
		for _, q := range qs {
			if q.Name == "main" {
				return q
			}
		}
		return queue.QueueState{}
	}
	held := func(attempts int) func() bool {
		return func() bool {
			q := state()
			return q.Running == nil && len(q.Pending) > 0 && q.Pending[0].Hook == "hang.sh" && q.Pending[0].Attempts == attempts && !q.RetryAt.IsZero()
		}
	}
	o.waitFor(t, "hang.sh's failed run held for its retry", held(1))

	// debug retry: the failed run runs now, and times out again.
	if out := o.debug(t, "retry", "main"); !strings.Contains(out, "1 failed run(s) retried now") {
		t.Errorf("debug retry said %q", out)
	}
	o.waitFor(t, "the retry's run", func() bool { return count("hang", "start") == 2 })
	o.waitFor(t, "the retry failed and held again", held(2))
	if count("other", "Event") != 0 {
		t.Fatal("other.sh ran while hang.sh's retry held the queue")
	}

	// debug drop: the failed run is dropped, and other.sh runs.
	if out := o.debug(t, "drop", "main", "hang.sh"); !strings.Contains(out, "1 pending run(s) of hang.sh dropped") {
		t.Errorf("debug drop said %q", out)
	}
	o.waitFor(t, "other.sh's event after the drop", func() bool { return count("other", "Event Added o1") == 1 })
	if n := count("hang", "start"); n != 2 {
		t.Errorf("hang.sh ran %d times, want 2 (its dropped run not again)", n)
	}
	o.waitFor(t, "the queue empty in queue_oldest_pending_seconds", func() bool {
		return o.metric(t, `hook_operator_queue_oldest_pending_seconds{queue="main"}`) == 0
	})

	// A hook removed while its run hangs: the run is stopped, its pending
	// runs are dropped, and the queue moves on.
	write(map[string]string{"hang.sh": hang(""), "other.sh": other})
	o.waitFor(t, "the reload that takes the timeout away", func() bool {
		return o.metric(t, `hook_operator_hooks_reload_total{result="applied"}`) >= 2
	})
	mkcm("h2", "hang")
	o.waitFor(t, "hang.sh's run for h2", func() bool { return count("hang", "start") == 3 })
	mkcm("h3", "hang")
	mkcm("o2", "other")
	write(map[string]string{"other.sh": other})
	o.waitFor(t, "other.sh's event after hang.sh was removed", func() bool { return count("other", "Event Added o2") == 1 })
	logs := o.logs.String()
	if !strings.Contains(logs, "the hook was removed by a reload while it ran") {
		t.Errorf("the log does not say the removed hook's run was stopped:\n%s", logs)
	}
	if n := count("hang", "start"); n != 3 {
		t.Errorf("hang.sh ran %d times, want 3 (its pending run for h3 dropped)", n)
	}
}
