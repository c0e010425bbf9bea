package debug

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/hook-operator/hook-operator/internal/debugapi"
)

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
	var out bytes.Buffer
	must(t, printTable(&out, func(w *tabwriter.Writer) { hooksTable(w, hs) }))
	lines := strings.Split(out.String(), "\n")
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
