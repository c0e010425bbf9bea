package queue

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Managing pending tasks from outside the workers: a reload that removes a
// hook drops its tasks (DropHook), and an operator, through `hook-operator
// debug`, may retry a failed task now instead of after its backoff
// (RetryNow) or drop pending tasks (Drop). OldestPending is what the
// queue_oldest_pending_seconds metric reads.

// ErrDropped is what Done is told about a task dropped before it ran (its
// hook was removed, or an operator dropped it).
var ErrDropped = errors.New("dropped before it ran")

// DropHook removes every pending task of the hook named hook from every
// queue, the failed ones waiting for their retry included, so that the
// queues move on at once (a reload removed the hook). It returns how many
// tasks it dropped. A running task is not touched: its caller cancels it.
func (s *Set) DropHook(hook string) int {
	s.mu.Lock()
	var dropped []*Task
	for _, q := range s.queues {
		dropped = append(dropped, s.dropLocked(q, func(t *Task) bool { return t.Hook.Name == hook })...)
	}
	s.mu.Unlock()
	finishDropped(dropped)
	return len(dropped)
}

// Drop removes from the queue named queue the pending tasks of the hook
// named hook (only those of the object key, when key is not empty), a
// failed task waiting for its retry included. It returns how many it
// dropped, or an error that says what is pending when nothing matched.
func (s *Set) Drop(queue, hook, key string) (int, error) {
	s.mu.Lock()
	q := s.queues[queue]
	if q == nil {
		s.mu.Unlock()
		return 0, s.unknownQueueLocked(queue)
	}
	dropped := s.dropLocked(q, func(t *Task) bool { return t.Hook.Name == hook && (key == "" || t.Key == key) })
	pending := pendingNames(q)
	s.mu.Unlock()
	finishDropped(dropped)
	if len(dropped) == 0 {
		what := "hook " + hook
		if key != "" {
			what += " with key " + key
		}
		return 0, fmt.Errorf("queue %s has no pending task of %s (pending: %s)", queue, what, pending)
	}
	return len(dropped), nil
}

// RetryNow makes the failed tasks of the queue named queue that wait for
// their backoff (or for the API server to answer again) run now. It
// returns how many it made due, or an error when none waits.
func (s *Set) RetryNow(queue string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q == nil {
		return 0, s.unknownQueueLocked(queue)
	}
	n := 0
	for _, m := range q.modes() {
		n += m.retryNow(q.tasks)
	}
	if n == 0 {
		return 0, fmt.Errorf("queue %s has no failed task waiting for its retry (pending: %s)", queue, pendingNames(q))
	}
	q.signal()
	return n, nil
}

// OldestPending returns, for every queue, how long its oldest pending task
// has waited since it was queued (a failed task waiting for its retry
// counts from when it was first queued); zero for a queue with none.
func (s *Set) OldestPending() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	out := make(map[string]time.Duration, len(s.queues))
	for name, q := range s.queues {
		var oldest time.Duration
		for _, t := range q.tasks {
			oldest = max(oldest, now.Sub(t.enqueued))
		}
		out[name] = oldest
	}
	return out
}

// Tasks returns, for every queue, how many tasks each hook has in it,
// pending and running.
func (s *Set) Tasks() map[string]map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]int, len(s.queues))
	for name, q := range s.queues {
		hooks := map[string]int{}
		for _, t := range q.tasks {
			hooks[t.Hook.Name]++
		}
		if t := q.serial.running; t != nil {
			hooks[t.Hook.Name]++
		}
		for _, t := range q.parallel.running {
			hooks[t.Hook.Name]++
		}
		out[name] = hooks
	}
	return out
}

// dropLocked removes q's pending tasks that match, and returns them. A
// dropped head that was held after a failure no longer holds q, nor does
// a dropped task hold its key.
func (s *Set) dropLocked(q *fifo, match func(*Task) bool) []*Task {
	if !slices.ContainsFunc(q.tasks, match) {
		return nil
	}
	defer s.Metrics.QueueAction(q.name, "DeleteFunc", s.Metrics.QueueActionStart())
	head := q.tasks[0]
	var dropped []*Task
	kept := q.tasks[:0:0]
	for _, t := range q.tasks {
		if match(t) {
			q.forgetLocked(t)
			dropped = append(dropped, t)
		} else {
			kept = append(kept, t)
		}
	}
	q.tasks = kept
	awaitsResume := false
	for _, m := range q.modes() {
		m.forget(kept, head)
		awaitsResume = awaitsResume || m.awaitsResume()
	}
	if !awaitsResume {
		q.resume = nil
	}
	s.Metrics.QueueLength(q.name, len(q.tasks))
	q.signal()
	return dropped
}

func finishDropped(tasks []*Task) {
	for _, t := range tasks {
		t.finish(ErrDropped)
	}
}

// pendingNames lists the hooks (with keys) of q's pending tasks, for
// errors.
func pendingNames(q *fifo) string {
	var out []string
	for _, t := range q.tasks {
		name := t.Hook.Name
		if t.Key != "" {
			name += " [" + t.Key + "]"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// DropCommand is the command that drops the pending runs of the hook
// named hook in the queue named queue (of its object key, when key is not
// empty), a failed run waiting for its retry included: what the log,
// readiness and `debug queues` name to free a queue a failing run holds.
func DropCommand(queue, hook, key string) string {
	cmd := "hook-operator debug drop " + shellWord(queue) + " " + shellWord(hook)
	if key != "" {
		cmd += " --key " + shellWord(key)
	}
	return cmd
}

// RetryCommand is the command that runs the failed runs of the queue
// named queue that wait for their retry now.
func RetryCommand(queue string) string { return "hook-operator debug retry " + shellWord(queue) }

// shellWord quotes s for a POSIX shell when it needs quoting: in single
// quotes, or, with a character a terminal would not show as itself in it
// (a control or format character, bytes that are not UTF-8), as bash's
// $'...' with each byte of that character escaped (\xHH), so that the
// command is safe to print and pastes back to the same bytes.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,%", r))
	}) < 0 {
		return s
	}
	if limit.Printable(s) == s {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteString(`\` + string(r))
		case r == utf8.RuneError && size == 1, limit.Printable(s[i:i+size]) != s[i:i+size]:
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}

// unknownQueueLocked is the error about a queue that does not exist; call it
// with s.mu held.
func (s *Set) unknownQueueLocked(queue string) error {
	names := make([]string, 0, len(s.queues))
	for name := range s.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	return fmt.Errorf("no queue is named %q; the queues are: %s", queue, strings.Join(names, ", "))
}
