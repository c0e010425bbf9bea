package limit

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pods/on-create.sh", "pods/on-create.sh"},
		{"grüße 名前 ✓", "grüße 名前 ✓"},
		{`a\b "c"`, `a\b "c"`},
		{"clear\x1b[2J", `clear\x1b[2J`},
		{"nul\x00end", `nul\x00end`},
		{"two\nlines\r\tx", `two\nlines\r\tx`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"rlo\u202eexe.sh", `rlo\u202eexe.sh`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
