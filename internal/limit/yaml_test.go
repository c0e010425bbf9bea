package limit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// anchorDoc is the reviewer's case: a list of strings of 1 KiB each under
// one anchor, and a list that references it refs times.
func anchorDoc(strs, refs int) string {
	var b strings.Builder
	b.WriteString("base: &a\n")
	for range strs {
		fmt.Fprintf(&b, "  - %s\n", strings.Repeat("x", 1024))
	}
	b.WriteString("refs:\n")
	for range refs {
		b.WriteString("  - *a\n")
	}
	return b.String()
}

func check(t *testing.T, doc string) error {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return CheckYAML(&n, len(doc))
}

func TestCheckYAMLRefusesManyReferencesToALargeAnchor(t *testing.T) {
	doc := anchorDoc(100, 1000) // 106 KB expanding to 100 MiB
	err := check(t, doc)
	var ee *ExpansionError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v, want an *ExpansionError", err)
	}
	if ee.Input != int64(len(doc)) || ee.Limit != 10*ee.Input || ee.Expanded < 1000*100*1024 {
		t.Errorf("got input %d, limit %d, expanded %d", ee.Input, ee.Limit, ee.Expanded)
	}
	if msg := err.Error(); !strings.Contains(msg, "would expand its 107.3 KiB to 97.9 MiB, over the limit of 1 MiB (10 times its size, at least 1 MiB, at most 8 MiB or its own size)") {
		t.Errorf("message: %s", msg)
	}
}

func TestCheckYAMLAllowsModestReuse(t *testing.T) {
	// A label set shared by a few objects, and a large document without
	// any alias.
	if err := check(t, anchorDoc(2, 50)); err != nil {
		t.Error(err)
	}
	if err := check(t, anchorDoc(5000, 0)); err != nil {
		t.Error(err)
	}
}

func TestCheckYAMLBoundGrowsWithTheInput(t *testing.T) {
	if got := MaxExpanded(100); got != MinExpansion {
		t.Errorf("MaxExpanded(100) = %d", got)
	}
	if got := MaxExpanded(512 << 10); got != ExpansionFactor*512<<10 {
		t.Errorf("MaxExpanded(512 KiB) = %d", got)
	}
	if got := MaxExpanded(4 << 20); got != MaxExpansion {
		t.Errorf("MaxExpanded(4 MiB) = %d", got)
	}
	if got := MaxExpanded(1 << 30); got != 1<<30 {
		t.Errorf("MaxExpanded(1 GiB) = %d, want its own size", got)
	}
	// 100 KiB referenced 50 times within a 600 KiB document: 5 MiB is
	// under ten times the document.
	doc := anchorDoc(100, 50) + "pad: " + strings.Repeat("p", 500<<10) + "\n"
	if err := check(t, doc); err != nil {
		t.Error(err)
	}
}

func TestCheckYAMLNestedAliasesCountEachLevel(t *testing.T) {
	// Ten levels of ten references: 10^9 expanded from a few hundred
	// bytes, and checked without expanding anything.
	var b strings.Builder
	b.WriteString("l0: &l0 [x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	if err := check(t, b.String()); err == nil {
		t.Error("no error for exponential aliases")
	}
}
