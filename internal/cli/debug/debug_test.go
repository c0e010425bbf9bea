package debug

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/hook-operator/hook-operator/internal/debugapi"
	"github.com/hook-operator/hook-operator/internal/queue"
)

// table returns the table fill writes, printed as the debug commands
// print it.
func table(t *testing.T, fill func(*tabwriter.Writer)) string {
	t.Helper()
	var out bytes.Buffer
	if err := printTable(&out, fill); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

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
	out := table(t, func(w *tabwriter.Writer) { queuesTable(w, qs) })
	want := "fails.sh's failed run (7 attempt(s)) holds queue main until its retry: `hook-operator debug retry main` runs it now, `hook-operator debug drop main fails.sh` drops it"
	if !strings.Contains(out, want) {
		t.Errorf("debug queues:\n%s\nwant the line %q", out, want)
	}
	if strings.Contains(out, "ok.sh's failed run") {
		t.Errorf("debug queues names ok.sh, which failed nothing:\n%s", out)
	}
}

// Hook and binding names, and errors, reach `debug hooks` escaped: a
// binding named with ESC must not drive the terminal of whoever looks.
func TestTablesEscapeControlCharacters(t *testing.T) {
	hs := []debugapi.HookState{{
		Name:      "evil\x1b[2J.sh",
		LastError: "exit 1: \x1b]0;owned\a",
		Bindings:  []debugapi.BindingState{{Name: "nul\x00del\x7f", Kind: "schedule", Crontab: "* * * * *"}},
	}}
	got := table(t, func(w *tabwriter.Writer) { hooksTable(w, hs) })
	for _, r := range strings.TrimSuffix(got, "\n") {
		if r < 0x20 && r != '\n' || r == 0x7f {
			t.Fatalf("debug hooks prints %U raw:\n%q", r, got)
		}
	}
	for _, want := range []string{`evil\x1b[2J.sh`, `nul\x00del\x7f`, `exit 1: \x1b]0;owned\a`} {
		if !strings.Contains(got, want) {
			t.Errorf("debug hooks lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("%d lines, want a header and one row:\n%s", n, got)
	}
}

// debug hooks shows each watching kubernetes binding's view age, marked
// STALE with its threshold once above it, and "-" for other bindings.
func TestHooksTableViewAge(t *testing.T) {
	fresh, old := 4.2, 312.0
	hs := []debugapi.HookState{{Name: "cms.sh", Bindings: []debugapi.BindingState{
		{Name: "fresh", Kind: "kubernetes", Synced: true, ViewAgeSeconds: &fresh, StaleAfterSeconds: 180},
		{Name: "frozen", Kind: "kubernetes", Synced: true, ViewAgeSeconds: &old, StaleAfterSeconds: 3, Stale: true},
		{Name: "unserved", Kind: "kubernetes", Waiting: "kind Thing is not served"},
		{Name: "every-minute", Kind: "schedule", Crontab: "* * * * *"},
	}}}
	lines := strings.Split(table(t, func(w *tabwriter.Writer) { hooksTable(w, hs) }), "\n")
	if !strings.Contains(lines[0], "VIEW AGE") {
		t.Fatalf("header %q lacks VIEW AGE", lines[0])
	}
	col := strings.Index(lines[0], "VIEW AGE")
	for i, want := range []string{"4s", "STALE 5m12s > 3s", "-", "-"} {
		if got := lines[i+1][col:]; !strings.HasPrefix(got, want+" ") {
			t.Errorf("binding %s: VIEW AGE column %q, want %q", hs[0].Bindings[i].Name, got, want)
		}
	}
}
