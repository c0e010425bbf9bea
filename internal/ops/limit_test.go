package ops

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// The reviewer's case: 106 KB of YAML whose one anchor (100 strings of
// 1 KiB) is referenced 1,000 times decoded to about 100 MiB and took the
// operator to 677 MB.
func TestParseRefusesYAMLWhoseAliasesExpandTooFar(t *testing.T) {
	var b strings.Builder
	b.WriteString("operation: CreateOrUpdate\nobject:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: big}\n  data:\n    base: &a\n")
	for range 100 {
		fmt.Fprintf(&b, "      - %s\n", strings.Repeat("x", 1024))
	}
	b.WriteString("    refs:\n")
	for range 1000 {
		b.WriteString("      - *a\n")
	}
	_, err := Parse([]byte(b.String()))
	var ee *limit.ExpansionError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v, want an *limit.ExpansionError", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "operation 0: YAML document: its aliases (*name) would expand its 111.7 KiB to 97.9 MiB, over the limit of 1.1 MiB") {
		t.Errorf("message: %s", msg)
	}
}

func TestParseKeepsModestAliases(t *testing.T) {
	ops := mustParse(t, `
- operation: CreateOrUpdate
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, labels: &l {app: x, tier: web}}}
- operation: CreateOrUpdate
  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, labels: *l}}
`)
	if len(ops) != 2 || ops[1].Object.GetLabels()["tier"] != "web" {
		t.Errorf("got %+v", ops)
	}
}

// 20 MB of invalid operations made an error of 117 MB, logged as one line
// and returned as an admission message.
func TestParseErrorOfManyOperationsIsBounded(t *testing.T) {
	var b strings.Builder
	for range 50_000 {
		b.WriteString(`{"operation": "Shred", "kind": "Pod", "name": "p"}` + "\n")
	}
	_, err := Parse([]byte(b.String()))
	if got := len(opErrors(t, err)); got != 50_000 {
		t.Errorf("%d errors joined, want every one", got)
	}
	msg := err.Error()
	if len(msg) > 12<<10 {
		t.Errorf("message is %d bytes", len(msg))
	}
	if !strings.HasPrefix(msg, `operation 0: operation: unknown operation "Shred"`) || !strings.HasSuffix(msg, "... and 49990 more (50000 problems in all; fix these and run again to see the rest)") {
		t.Errorf("message:\n%.300s\n...\n%s", msg, msg[max(0, len(msg)-200):])
	}
}

func TestParseErrorQuotesOnlyTheStartOfALongValue(t *testing.T) {
	name := strings.Repeat("N", 1<<20)
	_, err := Parse([]byte(`{"operation": "Delete", "kind": "Pod", "namespace": "` + name + `", "name": "p"}`))
	msg := err.Error()
	if len(msg) > 1024 || !strings.Contains(msg, `NNN... (1 MiB in all)" is not a namespace name`) {
		t.Errorf("message of %d bytes: %.400s", len(msg), msg)
	}
}
