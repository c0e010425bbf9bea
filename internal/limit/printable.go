package limit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every character a terminal or a log reader
// would not show as itself written as a Go escape: C0 and C1 control
// characters (ESC, NUL, a newline), DEL, Unicode format characters such as
// a right-to-left override, and bytes that are not UTF-8. Printable
// characters of any script stay as they are, and so do backslashes and
// quotes: the result is for people to read, not to parse back.
//
// Hook names come from file names and binding names from a hook's
// --config: a name holding "\x1b[2J" must not clear the screen of whoever
// runs `hooks list`, and one holding a newline must not forge a log line.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !printable(r) {
			return false
		}
	}
	return true
}

func printable(r rune) bool { return r == ' ' || unicode.IsPrint(r) }
