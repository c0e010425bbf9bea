package hook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/limit"
)

func TestLoadRefusesConfigOutputOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	// Prints without end: without the limit it would fill memory until the
	// config timeout.
	script(t, dir, "chatty.sh", `echo 'configVersion: v1'; yes '# more'`)
	start := time.Now()
	_, err := Load(context.Background(), dir, LoadOptions{MaxConfigBytes: 1 << 20, ConfigTimeout: time.Minute})
	want := "hook chatty.sh: --config printed more than 1 MiB, the most the operator reads from a hook; " +
		"print only the configuration (logs go to stderr), or raise the limit with start's --max-hook-output"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s: the hook was not stopped when it passed the limit", d)
	}
}

func TestLoadReadsConfigOutputUnderTheLimit(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "padded.sh", `echo 'configVersion: v1'; echo 'onStartup: 1'; for i in $(seq 1 1000); do echo "# padding $i"; done`)
	hooks, err := Load(context.Background(), dir, LoadOptions{MaxConfigBytes: 1 << 20})
	if err != nil || len(hooks) != 1 {
		t.Fatalf("got %d hooks, %v", len(hooks), err)
	}
}

func TestParseConfigRefusesAliasesThatExpandTooFar(t *testing.T) {
	var b strings.Builder
	b.WriteString("configVersion: v1\nsettings: {}\nbase: &a\n")
	for range 100 {
		fmt.Fprintf(&b, "  - %s\n", strings.Repeat("x", 1024))
	}
	b.WriteString("refs:\n")
	for range 1000 {
		b.WriteString("  - *a\n")
	}
	_, err := ParseConfig("big.sh", []byte(b.String()))
	var ee *limit.ExpansionError
	if !errors.As(err, &ee) && !strings.Contains(fmt.Sprint(err), "its aliases") {
		t.Fatalf("got %v", err)
	}
	want := "hook big.sh: --config output: its aliases (*name) would expand its 107.4 KiB to 97.9 MiB, over the limit of 1 MiB"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got  %s\nwant %s...", err, want)
	}
}

func TestParseConfigSyntaxErrorQuotesTheLine(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{"configVersion: v1\nkubernetes:\n- name: a\n  kind: Pod\n   jqFilter: .x\n",
			`yaml: line 5: mapping values are not allowed in this context; line 5 is "   jqFilter: .x"; indent the line like the other keys of its object, and quote a value that contains ": "`},
		{"configVersion: v1\nkubernetes:\n- name: a\n\tkind: Pod\n",
			`yaml: line 4: found a tab character that violates indentation; line 4 is "\tkind: Pod"; indent with spaces, not tabs`},
		{"configVersion: v1\nschedule: [\n",
			`yaml: line 2: did not find expected node content; line 2 is "schedule: ["; fix what --config prints`},
	} {
		_, err := ParseConfig("h.sh", []byte(c.config))
		if want := "hook h.sh: --config output is not valid YAML or JSON: " + c.want; err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

func TestConfigErrorsOfManyProblemsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("configVersion: v1\nkubernetes:\n")
	for i := range 2_000 {
		fmt.Fprintf(&b, "- name: b%d\n  kind: Pod\n  apiVersion: a/b/%s\n", i, strings.Repeat("v", 10_000))
	}
	_, err := ParseConfig("h.sh", []byte(b.String()))
	var errs ConfigErrors
	if !errors.As(err, &errs) || len(errs) < 2_000 {
		t.Fatalf("got %d problems, %.300v", len(errs), err)
	}
	msg := err.Error()
	if len(msg) > 12<<10 {
		t.Errorf("message is %d bytes", len(msg))
	}
	if !strings.HasSuffix(msg, fmt.Sprintf("... and %d more; fix these and load again to see the rest", len(errs)-limit.MaxListed)) {
		t.Errorf("message ends with %q", msg[max(0, len(msg)-200):])
	}
	if !strings.Contains(msg, `"a/b/vvv`) || !strings.Contains(msg, `vvv... (9.8 KiB in all)" is not an API version; write group/version`) {
		t.Errorf("a long value is not cut:\n%.1500s", msg)
	}
}
