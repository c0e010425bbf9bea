package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// hostile is a log record as a hook can make one: a stderr line or a JSON
// record's message, and keys, holding control and format characters.
func logHostile(l *logrus.Logger) {
	l.WithFields(logrus.Fields{
		"hook":             "evil\x1b[2J.sh",
		"key\x1b[31m":      "v",
		"nl\nforged=entry": 1,
	}).Warn("clear\x1b[2J del\x7f csi\u009b31m rlo\u202e bell\a")
}

// rawControl returns the first character of s that a terminal would act
// on instead of printing, or -1; the line's final newline is allowed, and
// the ESC sequences that color a line are left out first when colored.
func rawControl(s string, colored bool) rune {
	s = strings.TrimSuffix(s, "\n")
	if colored {
		for _, c := range []string{"\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[37m", "\x1b[0m"} {
			s = strings.ReplaceAll(s, c, "")
		}
	}
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u202e' {
			return r
		}
	}
	return -1
}

func TestLogLinesEscapeControlCharacters(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		colored      bool
	}{
		{"text", "text", false},
		{"text on a terminal", "text", true},
		{"json", "json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, buf := configured(t, "info", tc.format, true)
			if tc.colored {
				// As on a terminal: logrus colors the line and prints the
				// message unquoted.
				l.SetFormatter(escapeText(&logrus.TextFormatter{ForceColors: true, DisableTimestamp: true}, l))
			}
			logHostile(l)
			line := buf.String()
			if strings.Count(line, "\n") != 1 {
				t.Errorf("one record made %d lines:\n%s", strings.Count(line, "\n"), line)
			}
			if r := rawControl(line, tc.colored); r >= 0 {
				t.Errorf("the line holds %U raw: %q", r, line)
			}
			if tc.format != "json" {
				return
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not JSON any more: %v: %q", err, line)
			}
			if rec["msg"] != "clear\x1b[2J del\x7f csi\u009b31m rlo\u202e bell\a" || rec["key\x1b[31m"] != "v" {
				t.Errorf("the record decodes to %q: escaping must keep every value", rec)
			}
		})
	}
}

// On a file or a pipe (a container's log), text lines keep logrus's own
// quoting: nothing is escaped twice.
func TestTextLinesAreNotEscapedTwice(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Configure(l, "info", "text", true, f); err != nil {
		t.Fatal(err)
	}
	l.SetOutput(&buf)
	l.WithField("hook", "a\x1b.sh").Info("two\nlines")
	if want := `level=info msg="two\nlines" hook="a\x1b.sh"` + "\n"; buf.String() != want {
		t.Errorf("line = %q, want %q", buf.String(), want)
	}
}
