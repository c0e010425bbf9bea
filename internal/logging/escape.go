package logging

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// Log lines carry what hooks chose: their names (file names), binding
// names, the lines they print on stderr, and the keys of the JSON records
// they log. None of it may reach a terminal or a log viewer as control
// characters (ESC sequences that rewrite the screen, a newline that forges
// a line). logrus already quotes the message and every value in its plain
// text lines, and JSON escapes C0 controls; the formatters below escape
// what is left: keys in text, the message in colored text (printed as it
// is), and in JSON the characters that JSON leaves raw (DEL, C1 controls,
// format characters such as a right-to-left override).

// escapedText wraps a logrus.TextFormatter.
type escapedText struct {
	logrus.Formatter
	// colored says the formatter prints messages unquoted, as it does
	// with colors on a terminal.
	colored bool
}

func (f escapedText) Format(e *logrus.Entry) ([]byte, error) {
	if f.printable(e) {
		return f.Formatter.Format(e)
	}
	c := *e
	if f.colored {
		c.Message = limit.Printable(e.Message)
	}
	c.Data = make(logrus.Fields, len(e.Data))
	for k, v := range e.Data {
		c.Data[limit.Printable(k)] = v
	}
	return f.Formatter.Format(&c)
}

// printable reports whether e prints safely as it is.
func (f escapedText) printable(e *logrus.Entry) bool {
	if f.colored && limit.Printable(e.Message) != e.Message {
		return false
	}
	for k := range e.Data {
		if limit.Printable(k) != k {
			return false
		}
	}
	return true
}

// escapeText wraps t, the formatter of l.
func escapeText(t *logrus.TextFormatter, l *logrus.Logger) escapedText {
	return escapedText{Formatter: t, colored: printsColored(t, l)}
}

// printsColored reports whether t prints messages unquoted: it does when
// it colors its lines (on a terminal, or when forced to), and asking it is
// the one way to know what it decided for l's output.
func printsColored(t *logrus.TextFormatter, l *logrus.Logger) bool {
	probe := logrus.NewEntry(l)
	probe.Level = logrus.InfoLevel
	probe.Message = "probe"
	b, err := t.Format(probe)
	return err == nil && strings.HasPrefix(string(b), "\x1b[")
}

// escapedJSON wraps a logrus.JSONFormatter.
type escapedJSON struct{ logrus.Formatter }

func (f escapedJSON) Format(e *logrus.Entry) ([]byte, error) {
	b, err := f.Formatter.Format(e)
	if err != nil {
		return b, err
	}
	return escapeJSON(b), nil
}

// escapeJSON writes the characters of a JSON text that are not printable
// and that encoding/json leaves raw as \u escapes: the text decodes to the
// same values. Outside strings a JSON text is ASCII, so only strings
// change.
func escapeJSON(b []byte) []byte {
	if !needsJSONEscape(b) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if jsonRaw(r) {
			if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func needsJSONEscape(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf && b[i] != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if jsonRaw(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonRaw reports whether r is a character JSON encoding leaves as it is
// that a terminal would not print as itself.
func jsonRaw(r rune) bool {
	return r == 0x7f || r >= utf8.RuneSelf && r != utf8.RuneError && !unicode.IsPrint(r)
}
