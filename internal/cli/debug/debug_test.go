package debug

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/hook-operator/hook-operator/internal/queue"
)

// `debug queues` names the failed run that holds a queue, with the
// commands that free it; a task merely waiting behind it gets no note.
func TestQueuesTableNamesWhatHoldsAQueue(t *testing.T) {
	qs := []queue.QueueState{{
		Name:    "main",
		RetryAt: time.Now().Add(time.Minute),
		Pending: []queue.TaskState{
			{Hook: "fails.sh", Bindings: []string{"onStartup"}, Contexts: 1, Attempts: 7, LastError: "hook fails.sh: exit code 1", DropCommand: "hook-operator debug drop main fails.sh"},
			{Hook: "ok.sh", Bindings: []string{"cms"}, Contexts: 1},
		},
	}}
	var out bytes.Buffer
	w := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	queuesTable(w, qs)
	must(t, w.Flush())
	want := "fails.sh's failed run (7 attempt(s)) holds queue main until its retry: `hook-operator debug retry main` runs it now, `hook-operator debug drop main fails.sh` drops it"
	if !strings.Contains(out.String(), want) {
		t.Errorf("debug queues:\n%s\nwant the line %q", out.String(), want)
	}
	if strings.Contains(out.String(), "ok.sh's failed run") {
		t.Errorf("debug queues names ok.sh, which failed nothing:\n%s", out.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
