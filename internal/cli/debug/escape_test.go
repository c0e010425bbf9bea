package debug

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/hook-operator/hook-operator/internal/debugapi"
)

// Hook and binding names, and errors, reach `debug hooks` escaped: a
// binding named with ESC must not drive the terminal of whoever looks.
func TestTablesEscapeControlCharacters(t *testing.T) {
	hs := []debugapi.HookState{{
		Name:      "evil\x1b[2J.sh",
		LastError: "exit 1: \x1b]0;owned\a",
		Bindings:  []debugapi.BindingState{{Name: "nul\x00del\x7f", Kind: "schedule", Crontab: "* * * * *"}},
	}}
	var out bytes.Buffer
	must(t, printTable(&out, func(w *tabwriter.Writer) { hooksTable(w, hs) }))
	got := out.String()
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
