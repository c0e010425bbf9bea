package operator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/queue"
)

// startupRuns are the runs that start-up waits for: the onStartup runs,
// and the Synchronization runs of bindings with waitForSynchronization.
// Each is named, so that readiness, the log and debug can say which run
// holds start-up, how it goes, and what frees it (startupHolds).
type startupRuns struct {
	mu      sync.Mutex
	next    int
	runs    map[int]startupRun
	changed changeNotice
}

// startupRun is one run start-up waits for: binding is binding.OnStartup
// or the name of a kubernetes binding.
type startupRun struct {
	hook, binding, queue string
}

// add registers r, and returns the function that ends it, for the Done of
// its task (it may be called more than once).
func (s *startupRuns) add(r startupRun) func(error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[int]startupRun{}
	}
	id := s.next
	s.next++
	s.runs[id] = r
	s.changed.notify()
	return func(error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.runs[id]; ok {
			delete(s.runs, id)
			s.changed.notify()
		}
	}
}

// changes returns a channel closed at the next change.
func (s *startupRuns) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed.wait()
}

// list returns the runs not done, sorted by hook, binding and queue.
func (s *startupRuns) list() []startupRun {
	s.mu.Lock()
	out := make([]startupRun, 0, len(s.runs))
	for _, r := range s.runs {
		out = append(out, r)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b startupRun) int {
		return cmp.Or(cmp.Compare(a.hook, b.hook), cmp.Compare(a.binding, b.binding), cmp.Compare(a.queue, b.queue))
	})
	return slices.Compact(out)
}

// startupHolds describes each run start-up waits for, one line each, from
// the queues' state: the hook, binding and queue, and how the run goes
// (running, failed and waiting for its retry, or waiting behind another
// run), with the command that frees the queue when a failed run holds it.
func (o *Operator) startupHolds() []string {
	runs := o.startupRuns.list()
	if len(runs) == 0 {
		return nil
	}
	queues := o.queues.State()
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, describeStartupRun(r, queues, time.Now()))
	}
	return out
}

// describeStartupRun says how the run r goes, as queues show it at now.
func describeStartupRun(r startupRun, queues []queue.QueueState, now time.Time) string {
	what := r.hook + "'s onStartup run"
	if r.binding != binding.OnStartup {
		what = r.hook + "'s Synchronization run of binding " + r.binding
	}
	what += " (queue " + r.queue + ")"
	i := slices.IndexFunc(queues, func(q queue.QueueState) bool { return q.Name == r.queue })
	if i < 0 {
		return what + ", not queued yet"
	}
	q := queues[i]
	mine := func(t queue.TaskState) bool { return t.Hook == r.hook && slices.Contains(t.Bindings, r.binding) }
	if q.Running != nil && mine(*q.Running) {
		return what + ", running since " + since(q.Running.Started, now) + attemptsBefore(*q.Running)
	}
	for j, t := range q.Pending {
		if !mine(t) {
			continue
		}
		if j == 0 && t.Attempts > 0 {
			return what + ", which " + failed(t, q.RetryAt, now)
		}
		return what + ", queued" + behind(q, now)
	}
	return what + ", not queued yet"
}

// failed says how the failed task t, held for its retry at retryAt, went,
// and how to free its queue.
func failed(t queue.TaskState, retryAt time.Time, now time.Time) string {
	s := fmt.Sprintf("failed %d time(s) (last error: %s)", t.Attempts, errorSummary(t.LastError))
	if !retryAt.IsZero() {
		s += "; it is retried in " + retryAt.Sub(now).Round(time.Second).String()
	}
	return s + "; `" + t.DropCommand + "` drops it, or remove the hook from the hooks folder"
}

// behind says what a task queued in q behind others waits for: the
// running run, or the failed run that holds q.
func behind(q queue.QueueState, now time.Time) string {
	switch {
	case q.Running != nil:
		return " behind " + q.Running.Hook + "'s run, running since " + since(q.Running.Started, now) + attemptsBefore(*q.Running)
	case len(q.Pending) > 0 && q.Pending[0].Attempts > 0 && !q.RetryAt.IsZero():
		head := q.Pending[0]
		return " behind " + head.Hook + "'s run, which " + failed(head, q.RetryAt, now)
	}
	return ""
}

func attemptsBefore(t queue.TaskState) string {
	if t.Attempts == 0 {
		return ""
	}
	return fmt.Sprintf(", after %d failed attempt(s) (last error: %s; `%s` drops it once it fails again)", t.Attempts, errorSummary(t.LastError), t.DropCommand)
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// errorSummary is the first line of a run's error, without the hook's
// stderr (readiness is read by more than the log's readers; the log has
// it), cut to 200 bytes.
func errorSummary(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if cut, _, ok := strings.Cut(s, "; stderr ends with"); ok {
		s = cut + " (its stderr is in the log)"
	}
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:197], "") + "..."
	}
	return s
}
