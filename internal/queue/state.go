package queue

import (
	"sort"
	"time"
)

// QueueState describes one queue at a moment, for the debug routes.
type QueueState struct {
	Name string `json:"name"`
	// Running is the task being run, or nil.
	Running *TaskState `json:"running,omitempty"`
	// Parallel are the tasks with a Key being run, by key.
	Parallel []TaskState `json:"parallel,omitempty"`
	// Pending are the tasks waiting, in order. A task held after a failure
	// is the first, with Attempts > 0.
	Pending []TaskState `json:"pending"`
	// RetryAt is when the held head task runs again; zero when none is held.
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// TaskState describes one task.
type TaskState struct {
	Hook     string   `json:"hook"`
	Bindings []string `json:"bindings"`
	// Key is the object of a task of a hook with parallelism.
	Key      string    `json:"key,omitempty"`
	Contexts int       `json:"contexts"`
	Enqueued time.Time `json:"enqueued"`
	// Started is when the running task's run started.
	Started time.Time `json:"started,omitzero"`
	// Attempts counts the failed runs of the task so far.
	Attempts int `json:"attempts"`
	// LastError is the error of the last failed run.
	LastError string `json:"lastError,omitempty"`
	// RetryAt is when a task with a Key held after a failure runs again.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// DropCommand, for a task that failed, is the command that drops it
	// (DropCommand), freeing what it holds.
	DropCommand string `json:"dropCommand,omitempty"`
}

// State describes every queue, sorted by name.
func (s *Set) State() []QueueState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]QueueState, 0, len(s.queues))
	for _, q := range s.queues {
		st := QueueState{Name: q.name, Pending: []TaskState{}}
		for _, t := range q.tasks {
			st.Pending = append(st.Pending, taskState(t))
		}
		for _, m := range q.modes() {
			m.describe(&st, q.tasks)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func taskState(t *Task) TaskState {
	st := TaskState{Hook: t.Hook.Name, Key: t.Key, Contexts: len(t.Contexts), Enqueued: t.enqueued, Attempts: t.attempts, Bindings: []string{}}
	seen := map[string]bool{}
	for _, c := range t.Contexts {
		if !seen[c.Binding] {
			seen[c.Binding] = true
			st.Bindings = append(st.Bindings, c.Binding)
		}
	}
	if t.lastErr != nil {
		st.LastError = t.lastErr.Error()
	}
	if t.attempts > 0 {
		st.DropCommand = DropCommand(t.Queue, t.Hook.Name, t.Key)
	}
	return st
}
